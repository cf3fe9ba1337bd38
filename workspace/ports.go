package workspace

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/wink-mcp/wink-mcp/wire"
)

// Port previews: a container port shown on this machine's loopback.
const (
	// MaxPorts is how many ports a session may have open at once.
	MaxPorts = 8
	// maxPortConns is how many connections one open port carries at once.
	maxPortConns = 64
	// portStartTimeout bounds starting the container (or its tunnel) for a
	// connection to an open port.
	portStartTimeout = 2 * time.Minute
	// portAnswerTimeout bounds the agent's answer to a port request.
	portAnswerTimeout = 10 * time.Second
)

// ErrTooManyPorts refuses a port past MaxPorts.
var ErrTooManyPorts = fmt.Errorf("a session may have at most %d ports open; close one first (workspace_port with action close)", MaxPorts)

// PortInfo is an open port: the container's port and where this machine
// reaches it.
type PortInfo struct {
	Port int
	URL  string
}

// portForward is one open port's listener on this machine's loopback.
type portForward struct {
	port int
	ln   net.Listener
	open atomic.Int64 // connections carried now
}

func (f *portForward) info() PortInfo {
	return PortInfo{Port: f.port, URL: "http://" + f.ln.Addr().String() + "/"}
}

// OpenPort shows the container's port on this machine's loopback (only
// there, whatever the transport) and returns it with the session's open
// ports. It starts the container if needed; opening an open port again
// returns it as it is.
func (s *Session) OpenPort(ctx context.Context, port int) (PortInfo, []PortInfo, error) {
	if port < 1 || port > 65535 {
		return PortInfo{}, nil, fmt.Errorf("port %d is not a port number (1 to 65535)", port)
	}
	if _, err := s.ensureTunnel(ctx); err != nil {
		return PortInfo{}, nil, err
	}
	s.portsMu.Lock()
	defer s.portsMu.Unlock()
	if s.portsClosed {
		return PortInfo{}, nil, ErrSessionEnded
	}
	if f, ok := s.ports[port]; ok {
		return f.info(), s.portsLocked(), nil
	}
	if len(s.ports) >= MaxPorts {
		return PortInfo{}, s.portsLocked(), ErrTooManyPorts
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return PortInfo{}, nil, fmt.Errorf("listening on this machine's loopback: %w", err)
	}
	f := &portForward{port: port, ln: ln}
	if s.ports == nil {
		s.ports = map[int]*portForward{}
	}
	s.ports[port] = f
	go s.acceptPort(f)
	s.m.log.Info("port opened", "event", "port_opened", "session", s.hash, "port", port, "url", f.info().URL)
	return f.info(), s.portsLocked(), nil
}

// ClosePort stops showing a port and cuts its connections' listener; it
// returns the ports still open. Closing a port that is not open is an error.
func (s *Session) ClosePort(port int) ([]PortInfo, error) {
	s.portsMu.Lock()
	defer s.portsMu.Unlock()
	f, ok := s.ports[port]
	if !ok {
		return s.portsLocked(), fmt.Errorf("port %d is not open in this session", port)
	}
	delete(s.ports, port)
	f.ln.Close()
	s.m.log.Info("port closed", "event", "port_closed", "session", s.hash, "port", port)
	return s.portsLocked(), nil
}

// Ports lists the session's open ports.
func (s *Session) Ports() []PortInfo {
	s.portsMu.Lock()
	defer s.portsMu.Unlock()
	return s.portsLocked()
}

func (s *Session) portsLocked() []PortInfo {
	out := make([]PortInfo, 0, len(s.ports))
	for _, f := range s.ports {
		out = append(out, f.info())
	}
	slices.SortFunc(out, func(a, b PortInfo) int { return a.Port - b.Port })
	return out
}

// closePorts closes every open port, for good: the session ends.
func (s *Session) closePorts() {
	s.portsMu.Lock()
	defer s.portsMu.Unlock()
	s.portsClosed = true
	for port, f := range s.ports {
		f.ln.Close()
		delete(s.ports, port)
	}
}

// ensureTunnel returns the container's tunnel, starting the container and
// opening the tunnel when needed.
func (s *Session) ensureTunnel(ctx context.Context) (*yamux.Session, error) {
	defer s.enter()()
	if _, err := s.ensure(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return nil, ErrSessionEnded
	}
	if s.tunnel == nil || s.tunnel.IsClosed() {
		if err := s.openTunnelLocked(ctx); err != nil {
			return nil, err
		}
	}
	return s.tunnel, nil
}

func (s *Session) acceptPort(f *portForward) {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		if f.open.Add(1) > maxPortConns {
			f.open.Add(-1)
			go func() {
				errorPage(c, 503, fmt.Sprintf("port %d already carries %d connections, the most it may; close some and try again", f.port, maxPortConns))
			}()
			continue
		}
		go func() {
			defer f.open.Add(-1)
			defer c.Close()
			s.carryPort(c.(*net.TCPConn), f.port)
		}()
	}
}

// carryPort connects c to the container's port through the tunnel, or
// answers with a page that says why it cannot.
func (s *Session) carryPort(c *net.TCPConn, port int) {
	ctx, cancel := context.WithTimeout(s.life, portStartTimeout)
	mux, err := s.ensureTunnel(ctx)
	cancel()
	if err != nil {
		errorPage(c, 502, "the workspace could not be reached: "+err.Error())
		return
	}
	st, err := mux.OpenStream()
	if err != nil {
		errorPage(c, 502, "the workspace's tunnel failed: "+err.Error())
		return
	}
	defer st.Close()
	_ = st.SetDeadline(time.Now().Add(portAnswerTimeout))
	answer, err := func() (string, error) {
		if _, err := fmt.Fprintf(st, wire.PortRequest, port); err != nil {
			return "", err
		}
		return bufio.NewReader(io.LimitReader(st, 4096)).ReadString('\n')
	}()
	if err != nil {
		errorPage(c, 504, fmt.Sprintf("the workspace did not answer for port %d: %v", port, err))
		return
	}
	if answer != wire.PortOK {
		why := strings.TrimSpace(strings.TrimPrefix(answer, "error:"))
		errorPage(c, 502, fmt.Sprintf("nothing answers on port %d in the workspace (%s); start the server there, listening on 127.0.0.1 or 0.0.0.0", port, why))
		return
	}
	_ = st.SetDeadline(time.Time{})
	wire.Splice(c, st)
}

// errorPage answers a connection to an open port with an HTTP error page
// and closes it.
func errorPage(c net.Conn, status int, text string) {
	body := "wink-mcp port preview: " + text + ".\n"
	wire.Refuse(c, fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), len(body), body))
}
