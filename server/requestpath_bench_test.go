package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// BenchmarkRequestPath measures one tools/call through a transport and
// every hook the server runs before a handler (a tool that does nothing),
// with arguments of 1 KiB and 1 MiB and a progress token, as clients send.
//
// Besides ns/op it reports payload-decodes/op: how many times the request
// path reads a 1 MiB message whole, estimated as (the CPU time of a 1 MiB
// call - that of a 1 KiB call) / the CPU time of one json.Unmarshal of the
// 1 MiB message into an empty struct. It counts mcp-go's decodes as well as
// ours (mcp-go's decoding of the arguments into a map costs a little more
// than one), and the copies a transport makes add a little. CPU time, not
// wall time, so that other work on the machine does not count. Run it with
//
//	go test -tags '...' -trimpath -run '^$' -bench BenchmarkRequestPath -benchtime 200x ./server
func BenchmarkRequestPath(b *testing.B) {
	for _, transport := range []string{TransportStdio, TransportHTTP} {
		b.Run(transport, func(b *testing.B) {
			s := newTestServer(b)
			s.cfg.HTTP = DefaultHTTPConfig()
			s.mcp.AddTool(mcp.NewTool("bench_noop"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText("ok"), nil
			})
			call := benchStdio(b, s)
			if transport == TransportHTTP {
				call = benchHTTP(b, s)
			}
			small, large := benchCall(1<<10), benchCall(1<<20)
			b.Run("1KiB", func(b *testing.B) { benchCalls(b, call, small) })
			b.Run("1MiB", func(b *testing.B) {
				b.SetBytes(int64(len(large)))
				base := cpuEach(b, 20, func() { call(small) })
				whole := fmt.Appendf(nil, string(large), 0, 0)
				unit := cpuEach(b, 10, func() {
					if err := json.Unmarshal(whole, &struct{}{}); err != nil {
						b.Fatal(err)
					}
				})
				each := cpuEach(b, 1, func() { benchCalls(b, call, large) }) / time.Duration(b.N)
				b.ReportMetric(float64(each-base)/float64(unit), "payload-decodes/op")
			})
		})
	}
}

// benchCall is a tools/call of bench_noop with a progress token and an
// argument of size bytes.
func benchCall(size int) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%%d,"method":"tools/call","params":{"name":"bench_noop","arguments":{"content":%q},"_meta":{"progressToken":%%d}}}`,
		strings.Repeat("x", size))
}

// benchCalls makes b.N calls of msg, each with its own id and token, and
// checks each answer.
func benchCalls(b *testing.B, call func([]byte) []byte, msg []byte) {
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if answer := call(msg); !bytes.Contains(answer, []byte(`"ok"`)) {
			b.Fatalf("call %d: %.300s", i, answer)
		}
	}
}

// cpuEach returns the CPU time (user and system, of the whole process) n
// runs of f take, divided by n.
func cpuEach(b *testing.B, n int, f func()) time.Duration {
	start := cpuTime(b)
	for range n {
		f()
	}
	return (cpuTime(b) - start) / time.Duration(n)
}

// cpuTime is the CPU time the process has used so far.
func cpuTime(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// benchStdio serves s over pipes and returns a function that sends a call
// (a format with two %d, for the id and the token) and returns its answer.
func benchStdio(b *testing.B, s *Server) func([]byte) []byte {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- s.ServeStdio(context.Background(), inR, outW) }()
	b.Cleanup(func() { inW.Close(); <-done })
	out := bufio.NewReaderSize(outR, 1<<20)
	n := 0
	send := func(line []byte) []byte {
		if _, err := inW.Write(append(line, '\n')); err != nil {
			b.Fatal(err)
		}
		answer, err := out.ReadBytes('\n')
		if err != nil {
			b.Fatal(err)
		}
		return answer
	}
	send([]byte(initializeBody))
	if _, err := inW.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")); err != nil {
		b.Fatal(err)
	}
	return func(format []byte) []byte {
		n++
		return send(fmt.Appendf(nil, string(format), n, n))
	}
}

// benchHTTP serves s over streamable HTTP, opens a session and returns a
// function like benchStdio's.
func benchHTTP(b *testing.B, s *Server) func([]byte) []byte {
	base := serveHTTP(b, s, TransportHTTP)
	session := initialize(b, base)
	n := 0
	return func(format []byte) []byte {
		n++
		req, err := http.NewRequest(http.MethodPost, base+streamablePath, bytes.NewReader(fmt.Appendf(nil, string(format), n, n)))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", session)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		answer, err := io.ReadAll(resp.Body)
		if err != nil {
			b.Fatal(err)
		}
		return answer
	}
}
