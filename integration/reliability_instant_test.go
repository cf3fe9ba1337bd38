package integration

import (
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// heldService stands for a Podman service that hangs: it answers the
// bindings' /_ping, so a connection is made, and holds every other
// request without an answer until it is closed, recording each.
type heldService struct {
	socket string
	srv    *http.Server
	mu     sync.Mutex
	seen   []string
	closed chan struct{}
}

// newHeldService serves a held service on a socket of its own until the
// test ends.
func newHeldService(t *testing.T) *heldService {
	t.Helper()
	h := &heldService{socket: filepath.Join(t.TempDir(), "podman.sock"), closed: make(chan struct{})}
	ln, err := net.Listen("unix", h.socket)
	if err != nil {
		t.Fatal(err)
	}
	h.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/_ping") {
			w.Header().Set("Libpod-API-Version", "4.3.1")
			w.WriteHeader(http.StatusOK)
			return
		}
		h.mu.Lock()
		h.seen = append(h.seen, r.Method+" "+r.URL.Path)
		h.mu.Unlock()
		select {
		case <-h.closed:
		case <-r.Context().Done():
		}
	})}
	go func() { _ = h.srv.Serve(ln) }()
	t.Cleanup(h.close)
	return h
}

// close answers nothing more and ends the held requests.
func (h *heldService) close() {
	select {
	case <-h.closed:
	default:
		close(h.closed)
		h.srv.Close()
	}
}

// imageRequests are the requests about images the service was sent.
func (h *heldService) imageRequests() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.seen {
		if strings.Contains(r, "/images/") {
			out = append(out, r)
		}
	}
	return out
}

// instantInitialize opens sessions over stdio and HTTP, at 2025-06-18 and
// at 2025-11-25 (the harness's default, the newest with sessions), with
// and without a profile, while the Podman service hangs: each initialize
// answers without a request about an image (the only thing
// its instructions could want of the service), and names the session's
// image from the configuration: the server's, or its profile's base, which
// its setup builds from.
func instantInitialize(t *testing.T) {
	file, nonce := profilesFile(t, `profiles:
  fast-NONCE:
    image: IMAGE
    setup: ["echo fast > /etc/fast"]
`)
	type try struct {
		transport, protocol, profile string
	}
	var tries []try
	for _, transport := range []string{"stdio", "http"} {
		for _, protocol := range []string{mcp.ProtocolVersion20250618, ""} { // "": 2025-11-25
			for _, profile := range []string{"", "fast-" + nonce} {
				tries = append(tries, try{transport, protocol, profile})
			}
		}
	}
	broken := 0
	for _, c := range tries {
		service := newHeldService(t)
		args := []string{"--lazy", "--warm", "0", "--podman-url", "unix://" + service.socket, "--profiles", file}
		if c.profile != "" {
			args = append(args, "--profile", c.profile)
		}
		p := start(t, startOptions{transport: c.transport, protocol: c.protocol, args: args})
		t.Cleanup(service.close) // before the server's own clean-up, which would wait for it
		want := []string{"| image | `" + testImage + "` |"}
		if c.profile != "" {
			want = []string{"| image | `" + testImage + "` (profile `" + c.profile + "`'s setup builds the workspace's image from it) |", "| profile | `" + c.profile + "` |"}
		}
		asked := service.imageRequests()
		named := true
		for _, w := range want {
			named = named && strings.Contains(p.instructions, w)
		}
		if len(asked) > 0 || !named {
			broken++
			t.Errorf("%+v: the answer came after asking the service %q; image row %q, want %q", c, asked, imageRow(p.instructions), want)
		}
	}
	recordPromise(promiseFigure{Class: "speed: initialize over stdio and HTTP, at two protocol revisions, with and without a profile, while the Podman service hangs",
		Tried: len(tries), Broken: broken,
		Measured: fmt.Sprintf("%d of %d answers asked the service nothing about images and named the session's image from the configuration", len(tries)-broken, len(tries))})
}
