package workspace

import (
	"context"
	"errors"

	"github.com/hashicorp/yamux"

	"github.com/wink-mcp/wink-mcp/workspace/ports"
)

// MaxPorts is how many ports a session may have open at once. Port
// previews live in their own room, package ports; the names here keep the
// tools' view of them.
const MaxPorts = ports.MaxPorts

// ErrTooManyPorts refuses a port past MaxPorts.
var ErrTooManyPorts = ports.ErrTooManyPorts

// PortInfo is an open port: the container's port and where this machine
// reaches it.
type PortInfo = ports.PortInfo

// newPorts returns the session's port room, which reaches the container
// through the session's tunnel.
func (s *Session) newPorts() *ports.Room {
	return ports.New(ports.Deps{Tunnel: s.ensureTunnel, Life: s.life, Log: s.m.log, Session: s.hash,
		Hosts: s.m.cfg.PreviewHosts, Origins: s.m.cfg.PreviewOrigins})
}

// OpenPort shows the container's port on this machine's loopback (only
// there, whatever the transport) and returns it with the session's open
// ports. It starts the container if needed; opening an open port again
// returns it as it is.
func (s *Session) OpenPort(ctx context.Context, port int) (PortInfo, []PortInfo, error) {
	p, open, err := s.ports.OpenPort(ctx, port)
	if errors.Is(err, ports.ErrClosed) {
		err = ErrSessionEnded
	}
	return p, open, err
}

// ClosePort stops showing a port and cuts its connections; it returns the
// ports still open. Closing a port that is not open is an error.
func (s *Session) ClosePort(port int) ([]PortInfo, error) { return s.ports.ClosePort(port) }

// Ports lists the session's open ports.
func (s *Session) Ports() []PortInfo { return s.ports.Ports() }

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
