// Package ports shows a session's container ports on this machine's
// loopback: each open port is an HTTP preview that checks a request's Host
// and Origin and carries it to the container through the session's tunnel.
//
// Its one lock, Room.mu, guards the open ports; it is a leaf: the tunnel is
// reached before it is taken (Open) or without it (a preview's dial), so
// nothing else is locked while it is held.
package ports

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
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
	// portHandWait bounds the wait for a connection the agent said it
	// handed over (the tunnel's places all taken, say); past it the
	// connection is asked for again on a stream of the tunnel.
	portHandWait = 2 * time.Second
)

// ErrTooManyPorts refuses a port past MaxPorts.
var ErrTooManyPorts = fmt.Errorf("a session may have at most %d ports open; close one first (workspace_port with action close)", MaxPorts)

// Deps is what the room needs of its session.
type Deps struct {
	// Tunnel returns the container's tunnel, starting the container and
	// opening the tunnel when needed.
	Tunnel func(ctx context.Context) (*yamux.Session, error)
	// Handover returns what takes the connections the agent at the end
	// of tunnel hands over whole, nil when it hands over none (the
	// connections then ride the tunnel's streams).
	Handover func(tunnel *yamux.Session) Handover
	// Life ends when the session does; a preview starts the container
	// for a connection under it.
	Life context.Context
	// Log receives the room's records.
	Log *slog.Logger
	// Session is what logs call the session now.
	Session func() string
	// Hosts and Origins are the extra Host and Origin values a preview
	// accepts (Config.PreviewHosts, Config.PreviewOrigins).
	Hosts, Origins []string
	// Closed is the error OpenPort returns once the room is closed: the
	// session ended.
	Closed error
}

// Handover takes the connections to a container's ports that its agent
// hands over whole (engine.PortHandover).
type Handover interface {
	// Expect readies the hand-over of one connection to port: token goes
	// in the request to the agent, await returns the connection handed
	// with it, and cancel forgets the token.
	Expect(port int) (token string, await func(ctx context.Context) (net.Conn, error), cancel func())
}

// Room is one session's open ports, the part of its workspace the
// workspace_port tool takes (tools.PortPreviews). It is safe for
// concurrent use.
type Room struct {
	d Deps
	// mu guards ports and portsClosed, set when the session ends.
	mu          sync.Mutex
	ports       map[int]*portForward
	portsClosed bool
}

// New returns a room with no open port.
func New(d Deps) *Room { return &Room{d: d} }

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
// returns it as it is. After CloseAll it returns Deps.Closed.
func (s *Room) OpenPort(ctx context.Context, port int) (PortInfo, []PortInfo, error) {
	if port < 1 || port > 65535 {
		return PortInfo{}, nil, fmt.Errorf("port %d is not a port number (1 to 65535)", port)
	}
	if _, err := s.d.Tunnel(ctx); err != nil {
		return PortInfo{}, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.portsClosed {
		return PortInfo{}, nil, s.d.Closed
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
	s.d.Log.Info("port opened", "event", "port_opened", "session", s.d.Session(), "port", port, "url", f.info().URL)
	return f.info(), s.portsLocked(), nil
}

// ClosePort stops showing a port and cuts its connections; it returns the
// ports still open. Closing a port that is not open is an error.
func (s *Room) ClosePort(port int) ([]PortInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.ports[port]
	if !ok {
		return s.portsLocked(), fmt.Errorf("port %d is not open in this session", port)
	}
	delete(s.ports, port)
	f.close()
	s.d.Log.Info("port closed", "event", "port_closed", "session", s.d.Session(), "port", port)
	return s.portsLocked(), nil
}

// Ports lists the session's open ports.
func (s *Room) Ports() []PortInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.portsLocked()
}

func (s *Room) portsLocked() []PortInfo {
	out := make([]PortInfo, 0, len(s.ports))
	for _, f := range s.ports {
		out = append(out, f.info())
	}
	slices.SortFunc(out, func(a, b PortInfo) int { return a.Port - b.Port })
	return out
}

// CloseAll closes every open port, for good: the session ends.
func (s *Room) CloseAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.portsClosed = true
	for port, f := range s.ports {
		f.close()
		delete(s.ports, port)
	}
}
