package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"
)

// egressBytes is the size of the download the egress measurement makes.
const egressBytes = 100 << 20

// egressDownload is run with python3 in the workspace: it fetches url
// through the proxy (plain HTTP forwarding, as apt does) and fails unless
// every byte came.
const egressDownload = `import socket, sys
url, want = sys.argv[1], int(sys.argv[2])
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % url).encode())
buf, got, head = bytearray(1 << 20), 0, b""
while True:
    n = s.recv_into(buf)
    if n == 0:
        break
    if head is not None:
        head += bytes(buf[:n])
        i = head.find(b"\r\n\r\n")
        if i < 0:
            continue
        got, head = len(head) - i - 4, None
        continue
    got += n
sys.exit(0 if got == want else 1)
`

// measureEgress downloads egressBytes, n times, from a server on this
// machine's loopback that the session reaches through its egress proxy
// with an explicit --egress pattern, and the same download made directly
// on this machine as the baseline.
// The third, ceiling, is the same bytes written into a bare `podman exec
// -i` in the session's container: Podman's attach path, which the tunnel
// rides, with the CLI's start included.
func measureEgress(ctx context.Context, cfg config, n int) (through, direct, ceiling measurement) {
	name := fmt.Sprintf("egress: %d MB through the proxy (plain HTTP from this machine's loopback)", egressBytes>>20)
	baseName := "baseline: the same download made directly on this machine"
	ceilName := "reference: the same bytes into `podman exec -i` (Podman's attach path, CLI start included)"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return failed(name, err), failed(baseName, err), failed(ceilName, err)
	}
	chunk := []byte(strings.Repeat("x", 1<<20))
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(egressBytes))
		for range egressBytes / len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})}
	go srv.Serve(ln)
	defer srv.Close()
	url := "http://" + ln.Addr().String() + "/"

	s, err := startSessionIn(ctx, cfg, "", "--egress", ln.Addr().String())
	if err == nil {
		err = s.prepare(ctx)
	}
	if err != nil {
		return failed(name, err), failed(baseName, err), failed(ceilName, err)
	}
	defer s.close()
	download := func() error {
		return s.expect(ctx, "podman_shell", map[string]any{"command": []string{"python3", "-c", egressDownload, url, fmt.Sprint(egressBytes)}, "timeout_seconds": 120})
	}
	direct = timed(baseName, n, func() error {
		resp, err := http.Get(url)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		got, err := io.Copy(io.Discard, resp.Body)
		if err == nil && got != egressBytes {
			err = fmt.Errorf("got %d bytes of %d", got, egressBytes)
		}
		return err
	})
	through = timed(name, n, download)
	ceiling = timed(ceilName, n, func() error {
		cmd := exec.CommandContext(ctx, "podman", "--url", "unix://"+cfg.socket, "exec", "-i", s.container, "sh", "-c", "cat > /dev/null")
		cmd.Stdin = io.LimitReader(zeros{}, egressBytes)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	return through, direct, ceiling
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// timed runs fn once untimed, then n timed times.
func timed(name string, n int, fn func() error) measurement {
	var durations []time.Duration
	errs := 0
	for i := range n + 1 {
		start := time.Now()
		if err := fn(); err != nil {
			errs++
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
			continue
		}
		if i > 0 {
			durations = append(durations, time.Since(start))
		}
	}
	m := summarize(name, durations)
	m.Errors = errs
	return m
}
