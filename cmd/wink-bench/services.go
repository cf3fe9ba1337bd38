package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// serviceEcho is the service the measurement starts: a TCP echo server,
// a thread a connection, run with python3 from the workspace image.
const serviceEcho = `import socket, sys, threading
ln = socket.socket()
ln.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ln.bind(("127.0.0.1", int(sys.argv[1])))
ln.listen(64)
def serve(c):
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while True:
        d = c.recv(65536)
        if not d:
            break
        c.sendall(d)
    c.close()
while True:
    c, _ = ln.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
`

// serviceRoundTrips is the client: it times each one-byte round trip on
// one connection and prints them in milliseconds.
const serviceRoundTrips = `import socket, sys, time
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
out = []
for i in range(int(sys.argv[2]) + 20):
    t = time.perf_counter()
    c.sendall(b"x")
    c.recv(1)
    out.append((time.perf_counter() - t) * 1000)
print(" ".join("%.4f" % v for v in out[20:]))
`

// servicePort is the echo service's port.
const servicePort = 7777

// measureServices times a service's start (its container made and its
// port ready) and stop, and one-byte round trips to it from the workspace
// (its loopback, the server, the service's agent) against the same round
// trips inside the service's own container, the baseline.
func measureServices(ctx context.Context, cfg config) []measurement {
	startName := "service: start (its container made, the echo server's port ready) and stop"
	tripName := "service: 1-byte round trip from the workspace to its service's port (one connection)"
	baseName := "baseline: the same round trips inside the service's container"
	fail := func(err error) []measurement {
		return []measurement{failed(startName, err), failed(tripName, err), failed(baseName, err)}
	}
	dir, err := os.MkdirTemp("", "wink-bench-services-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "profiles.yaml")
	if err := os.WriteFile(file, []byte("profiles:\n  bench-svc:\n    image: "+cfg.image+"\n"), 0o644); err != nil {
		return fail(err)
	}
	s, err := startSessionIn(ctx, cfg, dir, "--profiles", file, "--profile", "bench-svc")
	if err == nil {
		err = s.prepare(ctx)
	}
	if err != nil {
		return fail(err)
	}
	defer s.close()
	spec := map[string]any{"action": "start", "name": "echo", "profile": "bench-svc", "ports": []int{servicePort}, "ready_port": servicePort,
		"command": []string{"python3", "-c", serviceEcho, strconv.Itoa(servicePort)}}
	stop := func() error {
		return s.expect(ctx, "workspace_service", map[string]any{"action": "stop", "name": "echo"})
	}
	starts := measure(startName, cfg.serviceSamples, func(int) error {
		if err := s.expect(ctx, "workspace_service", spec); err != nil {
			return err
		}
		return stop()
	})
	a, err := s.call(ctx, "workspace_service", spec)
	if err != nil || a.Result.IsError {
		return []measurement{starts, failed(tripName, fmt.Errorf("start: %v %+v", err, a)), failed(baseName, fmt.Errorf("no service"))}
	}
	var started struct {
		Service struct {
			Container string `json:"container"`
		} `json:"service"`
	}
	if err := json.Unmarshal(a.Result.StructuredContent, &started); err != nil {
		return []measurement{starts, failed(tripName, err), failed(baseName, err)}
	}
	trips := strconv.Itoa(cfg.samples)
	c, err := s.call(ctx, "podman_shell", map[string]any{"command": []string{"python3", "-c", serviceRoundTrips, strconv.Itoa(servicePort), trips}})
	var shell struct {
		Stdout string `json:"stdout"`
	}
	if err == nil {
		err = json.Unmarshal(c.Result.StructuredContent, &shell)
	}
	through := tripsMeasurement(tripName, shell.Stdout, err)
	out, err := exec.Command("podman", "--url", "unix://"+cfg.socket, "exec", started.Service.Container,
		"python3", "-c", serviceRoundTrips, strconv.Itoa(servicePort), trips).Output()
	base := tripsMeasurement(baseName, string(out), err)
	return []measurement{starts, through, base}
}

// tripsMeasurement summarises the round trips the client printed.
func tripsMeasurement(name, printed string, err error) measurement {
	if err != nil {
		return failed(name, err)
	}
	var durations []time.Duration
	for _, f := range strings.Fields(printed) {
		ms, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return failed(name, fmt.Errorf("the client printed %q", f))
		}
		durations = append(durations, time.Duration(ms*float64(time.Millisecond)))
	}
	if len(durations) == 0 {
		return failed(name, fmt.Errorf("the client printed nothing"))
	}
	return summarize(name, durations)
}
