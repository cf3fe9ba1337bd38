package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os/exec"
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

// previewRows are the port preview measurement's rows.
type previewRows struct {
	// through is the download on this machine through workspace_port's
	// URL (the agent hands the connection to the server on local
	// Podman); inside is the same client and download in the workspace,
	// straight to the server there: the pair to compare; attach is
	// through with the tunnel on the exec attach (--files-on-podman-host
	// yes), where the connection rides a stream of the tunnel.
	through, inside, attach measurement
}

func (r previewRows) all() []measurement { return []measurement{r.through, r.inside, r.attach} }

// measurePortPreview downloads egressBytes, n times, on this machine from
// a server in the workspace through the URL workspace_port returns (the
// tunnel's other direction), with the same client as the egress rows
// (egressDownload); then the same download made in the workspace, and
// through a session whose tunnel rides the exec attach.
func measurePortPreview(ctx context.Context, cfg config, n int) previewRows {
	mb := egressBytes >> 20
	r := previewRows{
		through: measurement{Name: fmt.Sprintf("port preview: %d MB from a server in the workspace, through workspace_port's URL, timed by its client on this machine", mb)},
		inside:  measurement{Name: "baseline: the same client and download in the workspace, straight to its server"},
		attach:  measurement{Name: fmt.Sprintf("port preview: %d MB with the tunnel on the exec attach (--files-on-podman-host yes): a stream of the tunnel", mb)},
	}
	var s *session
	r.through, s = previewThrough(ctx, cfg, n, r.through.Name)
	if s != nil {
		url := fmt.Sprintf("http://127.0.0.1:%d/", portPreviewPort)
		r.inside = timedBy(r.inside.Name, n, func() (time.Duration, error) {
			return s.clientTimed(ctx, egressDownload, "127.0.0.1", fmt.Sprint(portPreviewPort), url, fmt.Sprint(egressBytes))
		})
		s.close()
	} else {
		r.inside = failed(r.inside.Name, errors.New("no session"))
	}
	var viaAttach *session
	if r.attach, viaAttach = previewThrough(ctx, cfg, n, r.attach.Name, "--files-on-podman-host", "yes"); viaAttach != nil {
		viaAttach.close()
	}
	return r
}

// previewThrough starts a session with extra flags, serves egressBytes
// on portPreviewPort in its workspace, opens the port, and times n
// downloads through its URL on this machine; it returns the session,
// open, for more, or nil when it failed.
func previewThrough(ctx context.Context, cfg config, n int, name string, extra ...string) (measurement, *session) {
	s, err := startSessionIn(ctx, cfg, "", extra...)
	if err == nil {
		err = s.prepare(ctx)
	}
	if err != nil {
		if s != nil {
			s.close()
		}
		return failed(name, err), nil
	}
	fail := func(err error) (measurement, *session) {
		s.close()
		return failed(name, err), nil
	}
	if err := s.expect(ctx, "podman_shell", map[string]any{"background": true,
		"command": []string{"python3", "-c", portServer, fmt.Sprint(portPreviewPort), fmt.Sprint(egressBytes)}}); err != nil {
		return fail(err)
	}
	a, err := s.call(ctx, "workspace_port", map[string]any{"action": "open", "port": portPreviewPort})
	if err != nil || a.Result.IsError {
		return fail(fmt.Errorf("workspace_port: %v %+v", err, a))
	}
	var opened struct {
		Port struct {
			URL string `json:"url"`
		} `json:"port"`
	}
	if err := json.Unmarshal(a.Result.StructuredContent, &opened); err != nil {
		return fail(err)
	}
	u, err := url.Parse(opened.Port.URL)
	if err != nil {
		return fail(err)
	}
	host, port, _ := net.SplitHostPort(u.Host)
	download := func() (time.Duration, error) {
		out, err := exec.CommandContext(ctx, "python3", "-c", egressDownload, host, port, opened.Port.URL, fmt.Sprint(egressBytes)).Output()
		if err != nil {
			return 0, err
		}
		return parseSeconds(string(out))
	}
	// The job's server may take a moment to listen.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, err := download(); err == nil {
			break
		}
	}
	return timedBy(name, n, download), s
}
