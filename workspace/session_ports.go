package workspace

import (
	"context"

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
// through the session's tunnel (whose start counts as a call, see enter)
// and serves the workspace_port tool itself (Parts).
func (s *Session) newPorts() *ports.Room {
	return ports.New(ports.Deps{Tunnel: s.ensureTunnel, Handover: func(mux *yamux.Session) ports.Handover {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.tunnel != mux || s.tunnelPorts == nil {
			return nil
		}
		return s.tunnelPorts
	}, Life: s.life, Log: s.m.log, Session: s.who.hash, Hosts: s.m.cfg.PreviewHosts, Origins: s.m.cfg.PreviewOrigins, Closed: ErrSessionEnded})
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
