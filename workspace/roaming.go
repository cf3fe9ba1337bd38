package workspace

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/wink-mcp/wink-mcp/engine"
)

// A roaming workspace is a session's own workspace, not kept, that any
// server may serve in turn (SessionOptions.Roaming: a 2026-07-28
// handle's, on an engine whose containers every server drives:
// Kubernetes). The engine holds it by its lease alone (no volume:
// engine.KeptAsk.Roaming); its container is labelled LabelRoaming with
// its name, and moves between servers as a kept workspace's does
// (session_adopt.go): the holder asked for it closes its channel and
// leaves the container running, the next adopts it. Its files and running
// jobs go with the container; its checkpoints stay in this server's
// cache directory and go with the session. A server that closes leaves
// the containers of its roaming workspaces for the next server
// (serverClosing), as one killed does; its sweep keeps a dead server's
// container while the workspace's lease was renewed within the idle
// timeout (awaitsAdoption).

// roamingWorkspace is the engine's hold of a session's roaming workspace.
type roamingWorkspace struct {
	name string
	held *engine.Held
	// serverClosing is set when the server closes: the container stays
	// for the next server rather than being removed.
	serverClosing atomic.Bool
}

// holdRoaming takes the roaming workspace opts names from store, the
// manager's engine, for the session hash.
func holdRoaming(m *Manager, store engine.KeptStore, hash string, opts SessionOptions) (*engine.Held, error) {
	if _, adopts := m.eng.(engine.ContainerAdopter); store == nil || !adopts || !m.cfg.FilesOnEngineHost {
		return nil, errors.New("a workspace any server may serve in turn needs an engine whose containers every server drives (Kubernetes)")
	}
	idle := m.cfg.IdleTimeout
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*m.cfg.APITimeout+keptHoldWait*1e9)
	defer cancel()
	return store.HoldKept(ctx, engine.KeptAsk{
		Name:      opts.Roaming,
		Holder:    holderName(m, hash),
		Gone:      m.inst.holderGone,
		Principal: opts.Principal,
		OnWanted:  opts.OnWanted,
		Roaming:   true,
		Idle:      idle,
	})
}

// engineHold returns the label that names the workspace the engine holds
// for s (a kept workspace's, or a roaming one's), its value and the hold;
// a nil hold when the engine holds none.
func engineHold(s *Session) (label, name string, held *engine.Held) {
	switch {
	case s.roaming != nil:
		return LabelRoaming, s.roaming.name, s.roaming.held
	case s.kept != nil && s.kept.held != nil:
		return LabelWorkspace, s.kept.name, s.kept.held
	}
	return "", "", nil
}

// leavesForNextServer reports whether s, ending, leaves its container for
// another server: asked for it (engine.Held.Wanted), or a roaming
// workspace's as its server closes.
func leavesForNextServer(s *Session) bool {
	_, _, held := engineHold(s)
	switch {
	case held == nil:
		return false
	case s.roaming != nil && s.roaming.serverClosing.Load():
		return true
	}
	return held.Wanted != nil && held.Wanted()
}
