package workspace

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/hashicorp/yamux"
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

// portForward is one open port's listener on this machine's loopback and
// the preview server that answers on it.
type portForward struct {
	port      int
	ln        net.Listener
	srv       *http.Server
	transport *http.Transport
	open      atomic.Int64 // connections carried now
}

// close stops the preview: its listener and every connection it carries.
func (f *portForward) close() {
	f.srv.Close()
	f.transport.CloseIdleConnections()
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
	f.srv = s.previewServer(f)
	if s.ports == nil {
		s.ports = map[int]*portForward{}
	}
	s.ports[port] = f
	go f.srv.Serve(portListener{Listener: ln, f: f})
	s.m.log.Info("port opened", "event", "port_opened", "session", s.hash(), "port", port, "url", f.info().URL)
	return f.info(), s.portsLocked(), nil
}

// ClosePort stops showing a port and cuts its connections; it returns the
// ports still open. Closing a port that is not open is an error.
func (s *Session) ClosePort(port int) ([]PortInfo, error) {
	s.portsMu.Lock()
	defer s.portsMu.Unlock()
	f, ok := s.ports[port]
	if !ok {
		return s.portsLocked(), fmt.Errorf("port %d is not open in this session", port)
	}
	delete(s.ports, port)
	f.close()
	s.m.log.Info("port closed", "event", "port_closed", "session", s.hash(), "port", port)
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
		f.close()
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
