package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// egressBytes is the size of the download the egress measurement makes.
const egressBytes = 100 << 20

// egressDownload is run with python3, in the workspace against its proxy
// and on this machine straight against the server: it connects to the
// address given, asks for url (in the absolute form a proxy takes, which
// Go's server takes too), fails unless every byte came, and prints how
// long that took, from before connecting to the last byte, in seconds:
// the download alone, without the start of the process around it.
const egressDownload = `import socket, sys, time
host, port, url, want = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
start = time.perf_counter()
s = socket.create_connection((host, port))
s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (url, url.split("/")[2])).encode())
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
took = time.perf_counter() - start
if got != want:
    sys.exit("got %d bytes of %d" % (got, want))
print("%.9f" % took)
`

// egressRows are the egress measurement's rows.
type egressRows struct {
	// through is the download through the proxy, as its client in the
	// workspace times it; direct the same client and download on this
	// machine, straight to the server: the pair the target compares.
	through, direct measurement
	// call is the whole podman_shell call around through (python3's start
	// included); goDirect is Go's http.Get of the same URL in this process;
	// ceiling is the same bytes into a bare `podman exec -i`.
	call, goDirect, ceiling measurement
	// attach is through, with the tunnel on the exec attach (the path of
	// ssh, podman machine and --files-on-podman-host).
	attach measurement
}

func (r egressRows) all() []measurement {
	return []measurement{r.through, r.direct, r.call, r.goDirect, r.ceiling, r.attach}
}

// measureEgress downloads egressBytes, n times each way, from a server on
// this machine's loopback that the session reaches through its egress
// proxy with an explicit --egress pattern, and the same download made
// directly on this machine as the baseline.
func measureEgress(ctx context.Context, cfg config, n int) egressRows {
	mb := egressBytes >> 20
	r := egressRows{
		through:  measurement{Name: fmt.Sprintf("egress: %d MB through the proxy (plain HTTP from this machine's loopback), timed by its client in the workspace", mb)},
		direct:   measurement{Name: "baseline: the same client and download on this machine, straight to the server"},
		call:     measurement{Name: fmt.Sprintf("egress: the whole podman_shell call around the %d MB download (python3's start included)", mb)},
		goDirect: measurement{Name: "reference: Go's http.Get of the same download in this process"},
		ceiling:  measurement{Name: "reference: the same bytes into `podman exec -i` (Podman's attach path, CLI start included)"},
		attach:   measurement{Name: fmt.Sprintf("egress: %d MB through the proxy with the tunnel on the exec attach (--files-on-podman-host yes), timed by its client", mb)},
	}
	fail := func(err error) egressRows {
		for _, m := range []*measurement{&r.through, &r.direct, &r.call, &r.goDirect, &r.ceiling, &r.attach} {
			*m = failed(m.Name, err)
		}
		return r
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
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
	host, port, _ := net.SplitHostPort(ln.Addr().String())

	s, err := startSessionIn(ctx, cfg, "", "--egress", ln.Addr().String())
	if err == nil {
		err = s.prepare(ctx)
	}
	if err != nil {
		return fail(err)
	}
	defer s.close()
	download := func(s *session) (time.Duration, error) {
		return s.clientTimed(ctx, egressDownload, "127.0.0.1", "3128", url, fmt.Sprint(egressBytes))
	}
	var took []time.Duration
	runs := 0
	r.call = timed(r.call.Name, n, func() error {
		d, err := download(s)
		if err == nil && runs > 0 { // the first, untimed, warms up
			took = append(took, d)
		}
		runs++
		return err
	})
	r.through = summarize(r.through.Name, took)
	r.through.Errors = r.call.Errors
	r.direct = timedBy(r.direct.Name, n, func() (time.Duration, error) {
		out, err := exec.CommandContext(ctx, "python3", "-c", egressDownload, host, port, url, fmt.Sprint(egressBytes)).Output()
		if err != nil {
			return 0, err
		}
		return parseSeconds(string(out))
	})
	r.goDirect = timed(r.goDirect.Name, n, func() error {
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
	r.ceiling = timed(r.ceiling.Name, n, func() error {
		cmd := exec.CommandContext(ctx, "podman", "--url", "unix://"+cfg.socket, "exec", "-i", s.container, "sh", "-c", "cat > /dev/null")
		cmd.Stdin = io.LimitReader(zeros{}, egressBytes)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	viaAttach, err := startSessionIn(ctx, cfg, "", "--egress", ln.Addr().String(), "--files-on-podman-host", "yes")
	if err == nil {
		err = viaAttach.prepare(ctx)
	}
	if err != nil {
		r.attach = failed(r.attach.Name, err)
		return r
	}
	defer viaAttach.close()
	r.attach = timedBy(r.attach.Name, n, func() (time.Duration, error) { return download(viaAttach) })
	return r
}

// clientTimed runs a python3 program in the workspace that prints how
// long what it timed took, in seconds, and returns that.
func (s *session) clientTimed(ctx context.Context, program string, args ...string) (time.Duration, error) {
	a, err := s.call(ctx, "podman_shell", map[string]any{"command": append([]string{"python3", "-c", program}, args...), "timeout_seconds": 120})
	if err != nil {
		return 0, err
	}
	var out struct {
		ExitCode int    `json:"exit_code"`
		Stdout   string `json:"stdout"`
		Stderr   string `json:"stderr"`
	}
	if a.Result.IsError || json.Unmarshal(a.Result.StructuredContent, &out) != nil || out.ExitCode != 0 {
		return 0, fmt.Errorf("the download in the workspace failed: %+v %s", a.Result, out.Stderr)
	}
	return parseSeconds(out.Stdout)
}

// parseSeconds reads a duration printed in seconds.
func parseSeconds(s string) (time.Duration, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, fmt.Errorf("the client printed %q, not seconds", s)
	}
	return time.Duration(f * float64(time.Second)), nil
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// timed runs fn once untimed, then n timed times.
func timed(name string, n int, fn func() error) measurement {
	return timedBy(name, n, func() (time.Duration, error) {
		start := time.Now()
		err := fn()
		return time.Since(start), err
	})
}

// timedBy runs fn once untimed, then n times, each saying how long what
// it measures took.
func timedBy(name string, n int, fn func() (time.Duration, error)) measurement {
	var durations []time.Duration
	errs := 0
	for i := range n + 1 {
		d, err := fn()
		if err != nil {
			errs++
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
			continue
		}
		if i > 0 {
			durations = append(durations, d)
		}
	}
	m := summarize(name, durations)
	m.Errors = errs
	return m
}
