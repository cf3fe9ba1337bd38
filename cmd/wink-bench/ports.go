package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// portServer is run with python3 in the workspace as a background job: a
// server on the container's loopback that answers every request with
// egressBytes, as fast as Python writes them.
const portServer = `import socket, sys
total = int(sys.argv[2])
chunk = b"x" * (1 << 20)
ln = socket.socket()
ln.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ln.bind(("127.0.0.1", int(sys.argv[1])))
ln.listen(16)
while True:
    c, _ = ln.accept()
    try:
        req = b""
        while b"\r\n\r\n" not in req:
            got = c.recv(4096)
            if not got:
                break
            req += got
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % total)
        for _ in range(total // len(chunk)):
            c.sendall(chunk)
    except OSError:
        pass
    c.close()
`

// portPreviewPort is the container port the measurement serves on.
const portPreviewPort = 8765

// measurePortPreview downloads egressBytes, n times, on this machine from
// a server in the workspace through the URL workspace_port returns: the
// tunnel's other direction.
func measurePortPreview(ctx context.Context, cfg config, n int) measurement {
	name := fmt.Sprintf("port preview: %d MB from a server in the workspace, through workspace_port's URL", egressBytes>>20)
	s, err := startSessionIn(ctx, cfg, "")
	if err == nil {
		err = s.prepare(ctx)
	}
	if err != nil {
		return failed(name, err)
	}
	defer s.close()
	if err := s.expect(ctx, "podman_shell", map[string]any{"background": true,
		"command": []string{"python3", "-c", portServer, fmt.Sprint(portPreviewPort), fmt.Sprint(egressBytes)}}); err != nil {
		return failed(name, err)
	}
	a, err := s.call(ctx, "workspace_port", map[string]any{"action": "open", "port": portPreviewPort})
	if err != nil || a.Result.IsError {
		return failed(name, fmt.Errorf("workspace_port: %v %+v", err, a))
	}
	var opened struct {
		Port struct {
			URL string `json:"url"`
		} `json:"port"`
	}
	if err := json.Unmarshal(a.Result.StructuredContent, &opened); err != nil {
		return failed(name, err)
	}
	get := func() error {
		resp, err := http.Get(opened.Port.URL)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		got, err := io.Copy(io.Discard, resp.Body)
		if err == nil && (resp.StatusCode != http.StatusOK || got != egressBytes) {
			err = fmt.Errorf("status %d, %d bytes of %d", resp.StatusCode, got, egressBytes)
		}
		return err
	}
	// The job's server may take a moment to listen.
	for deadline := time.Now().Add(10 * time.Second); get() != nil && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	return timed(name, n, get)
}
