package ports

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/wink-mcp/wink-mcp/hostguard"
	"github.com/wink-mcp/wink-mcp/wire"
)

// A port preview is an HTTP proxy on this machine's loopback: every request
// is checked against the MCP endpoint's Host and Origin rules before it
// reaches the container, so a web page that finds the port (by DNS
// rebinding, or a cross-site request) cannot read the model's server.
const (
	// previewHeaderTimeout bounds reading a request's header, so a silent
	// connection does not hold one of the port's places.
	previewHeaderTimeout = 30 * time.Second
	// previewIdleTimeout closes a browser's idle keep-alive connections.
	previewIdleTimeout = 2 * time.Minute
)

// copyBuffers are a preview's response copy buffers: 256 KiB, an eighth
// of the reads and writes of the reverse proxy's own 32 KiB for a large
// download, at most 16 MiB for one port's 64 connections.
var copyBuffers = &bufferPool{pool: sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}}

// bufferPool is an httputil.BufferPool over a sync.Pool.
type bufferPool struct{ pool sync.Pool }

func (b *bufferPool) Get() []byte  { return *b.pool.Get().(*[]byte) }
func (b *bufferPool) Put(p []byte) { b.pool.Put(&p) }

// portError is why a request could not reach the container's port, as the
// page says it.
type portError struct {
	status int
	text   string
}

func (e *portError) Error() string { return e.text }

// previewServer serves the open port f: the Host and Origin check, then a
// reverse proxy to the container's port through the tunnel.
func (s *Room) previewServer(f *portForward) *http.Server {
	rules := hostguard.New(s.d.Hosts, s.d.Origins, []string{f.ln.Addr().String()})
	f.transport = &http.Transport{
		DialContext:         func(context.Context, string, string) (net.Conn, error) { return s.dialPort(f.port) },
		DisableCompression:  true, // the request's own Accept-Encoding goes through as it is
		MaxIdleConnsPerHost: maxPortConns,
		IdleConnTimeout:     previewIdleTimeout,
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", f.ln.Addr().String()
			pr.Out.Host = pr.In.Host // the server in the container sees the Host the browser sent
		},
		Transport:     f.transport,
		BufferPool:    copyBuffers,
		FlushInterval: -1, // event streams and hot reloads go through at once
		ErrorLog:      log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			var pe *portError
			if !errors.As(err, &pe) {
				pe = &portError{http.StatusBadGateway, fmt.Sprintf("the server on port %d in the workspace failed: %v", f.port, err)}
			}
			previewPage(w, pe.status, pe.text)
		},
	}
	return &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if refusal := rules.Check(r); refusal != nil {
				s.d.Log.Info("port preview refused", "event", "port_refused", "session", s.d.Session(), "port", f.port, "reason", refusal.Reason,
					"host", truncate(r.Host, 100), "origin", truncate(r.Header.Get("Origin"), 100), "remote", r.RemoteAddr)
				previewPage(w, http.StatusForbidden, refusal.Message+"; this preview answers requests that name it 127.0.0.1 or localhost, from no page or a page on this machine")
				return
			}
			proxy.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: previewHeaderTimeout,
		IdleTimeout:       previewIdleTimeout,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
}

// dialPort connects to the container's port, starting the container if
// needed: the agent's own connection, handed over, when the tunnel rides
// a socket, else (or when the hand-over fails) a stream of the tunnel.
func (s *Room) dialPort(port int) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(s.d.Life, portStartTimeout)
	mux, err := s.d.Tunnel(ctx)
	cancel()
	if err != nil {
		return nil, &portError{http.StatusBadGateway, "the workspace could not be reached: " + err.Error()}
	}
	if s.d.Handover != nil {
		if h := s.d.Handover(mux); h != nil {
			c, err := s.handedPort(mux, h, port)
			if c != nil || err != nil {
				return c, err
			}
		}
	}
	st, answer, err := askPort(mux, port, fmt.Sprintf(wire.PortRequest, port))
	if err != nil {
		return nil, err
	}
	if answer != wire.PortOK {
		st.Close()
		return nil, noServer(port, answer)
	}
	_ = st.SetDeadline(time.Time{})
	return st, nil
}

// handedPort asks the agent to hand over its connection to port: the
// connection, or nil and no error when the agent carries it on the tunnel
// instead, or the hand-over failed (the caller then asks for a stream).
func (s *Room) handedPort(mux *yamux.Session, h Handover, port int) (net.Conn, error) {
	token, await, cancel := h.Expect(port)
	defer cancel()
	st, answer, err := askPort(mux, port, fmt.Sprintf(wire.PortHandRequest, port, token))
	if err != nil {
		return nil, err
	}
	switch answer {
	case wire.PortOK: // the agent could not hand it over: the stream carries it
		_ = st.SetDeadline(time.Time{})
		return st, nil
	case wire.PortHanded:
		st.Close()
		ctx, stop := context.WithTimeout(s.d.Life, portHandWait)
		defer stop()
		c, err := await(ctx)
		if err != nil {
			s.d.Log.Warn("a port preview's connection was not handed over; it rides the tunnel", "session", s.d.Session(), "port", port, "err", err)
			return nil, nil
		}
		return c, nil
	default:
		st.Close()
		return nil, noServer(port, answer)
	}
}

// askPort opens a stream of the tunnel, writes request (for port), and
// reads the agent's one-line answer.
func askPort(mux *yamux.Session, port int, request string) (*yamux.Stream, string, error) {
	st, err := mux.OpenStream()
	if err != nil {
		return nil, "", &portError{http.StatusBadGateway, "the workspace's tunnel failed: " + err.Error()}
	}
	_ = st.SetDeadline(time.Now().Add(portAnswerTimeout))
	answer, err := func() (string, error) {
		if _, err := io.WriteString(st, request); err != nil {
			return "", err
		}
		return bufio.NewReader(io.LimitReader(st, 4096)).ReadString('\n')
	}()
	if err != nil {
		st.Close()
		return nil, "", &portError{http.StatusGatewayTimeout, fmt.Sprintf("the workspace did not answer for port %d: %v", port, err)}
	}
	return st, answer, nil
}

// noServer is the page for an agent's answer that nothing listens.
func noServer(port int, answer string) error {
	why := strings.TrimSpace(strings.TrimPrefix(answer, "error:"))
	return &portError{http.StatusBadGateway, fmt.Sprintf("nothing answers on port %d in the workspace (%s); start the server there, listening on 127.0.0.1 or 0.0.0.0", port, why)}
}

// previewPage answers a request with the preview's own error page.
func previewPage(w http.ResponseWriter, status int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	fmt.Fprintf(w, "wink-mcp port preview: %s.\n", text)
}

// portListener hands the preview's server at most maxPortConns
// connections at once and answers the rest with a page at once.
type portListener struct {
	net.Listener
	f *portForward
}

func (l portListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.f.open.Add(1) > maxPortConns {
			l.f.open.Add(-1)
			go errorPage(c, http.StatusServiceUnavailable, fmt.Sprintf("port %d already carries %d connections, the most it may; close some and try again", l.f.port, maxPortConns))
			continue
		}
		return &portConn{Conn: c, open: &l.f.open}, nil
	}
}

// portConn gives its place back once when it closes.
type portConn struct {
	net.Conn
	open   *atomic.Int64
	closed atomic.Bool
}

func (c *portConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.open.Add(-1)
	}
	return c.Conn.Close()
}

// errorPage answers a connection to an open port with an HTTP error page
// and closes it.
func errorPage(c net.Conn, status int, text string) {
	body := "wink-mcp port preview: " + text + ".\n"
	wire.Refuse(c, fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), len(body), body))
}

// truncate cuts a value a client sent to at most n bytes for a log record.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
