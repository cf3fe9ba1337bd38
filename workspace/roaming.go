package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/workspace/keep"
)

// A roaming workspace is a session's own workspace, not kept, that any
// server may serve in turn (SessionOptions.Roaming: a 2026-07-28
// handle's, on an engine whose containers every server drives:
// Kubernetes). The engine holds it by its lease alone (no volume:
// engine.KeptAsk.Roaming); its container is labelled LabelRoaming with
// its name, and moves between servers as a kept workspace's does
// (session_adopt.go): the holder asked for it closes its channel and
// leaves the container running, the next adopts it. Its files and running
// jobs go with the container; its checkpoints go with it too when the
// servers share a checkpoint directory (roaming_store.go), else they stay
// in this server's cache directory and go with the session. A server that closes leaves
// the containers of its roaming workspaces for the next server
// (serverClosing), as one killed does; its sweep keeps a dead server's
// container while the workspace's lease was renewed within the idle
// timeout (awaitsAdoption).

// errRoamingNeedsAdopter refuses a roaming workspace on an engine whose
// containers only one server drives.
var errRoamingNeedsAdopter = errors.New("a workspace any server may serve in turn needs an engine whose containers every server drives (Kubernetes)")

// leaveRoamingOnClose marks the roaming workspaces of sessions, which
// the closing server is about to end, as left for the next server.
func leaveRoamingOnClose(sessions map[string]*Session) {
	for _, s := range sessions {
		if s.roaming != nil {
			s.roaming.serverClosing.Store(true)
		}
	}
}

// roamingWorkspace is the engine's hold of a session's roaming workspace.
type roamingWorkspace struct {
	name string
	held *engine.Held
	// serverClosing is set when the server closes: the container stays
	// for the next server rather than being removed.
	serverClosing atomic.Bool
	// handedOverUntil, when not 0, is when the handoff of the workspace
	// expires (UnixNano): its container waits for the taker until then.
	handedOverUntil atomic.Int64
	// onWanted is what its server is told when another asks for the
	// workspace (engine.KeptAsk.OnWanted); the fresh workspace a handoff
	// leaves the session is asked for the same way.
	onWanted func()
	// storeLock, when set, is the lock of the workspace's checkpoint
	// store in the shared checkpoint directory (roaming_store.go).
	storeLock *os.File
}

// holdRoaming takes the roaming workspace opts names from store, the
// manager's engine, for the session hash.
func holdRoaming(m *Manager, store engine.KeptStore, hash string, opts SessionOptions) (*engine.Held, error) {
	if _, adopts := m.eng.(engine.ContainerAdopter); store == nil || !adopts || !m.cfg.FilesOnEngineHost {
		return nil, errRoamingNeedsAdopter
	}
	idle := m.cfg.IdleTimeout
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*m.cfg.APITimeout+keptHoldWait*1e9)
	defer cancel()
	held, err := store.HoldKept(ctx, engine.KeptAsk{
		Name:      opts.Roaming,
		Holder:    holderName(m, hash),
		Gone:      m.inst.holderGone,
		Principal: opts.Principal,
		OnWanted:  opts.OnWanted,
		Roaming:   true,
		Idle:      idle,
	})
	if err != nil {
		return nil, err
	}
	awaitRoamingStore(&m.cfg, opts.Roaming)
	return held, nil
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
// workspace's as its server closes or once handed over.
func leavesForNextServer(s *Session) bool {
	_, _, held := engineHold(s)
	switch {
	case held == nil:
		return false
	case s.roaming != nil && (s.roaming.serverClosing.Load() || s.roaming.handedOverUntil.Load() != 0):
		return true
	}
	return held.Wanted != nil && held.Wanted()
}

// handOverRoaming is handoffs.Handoff for a session with a roaming
// workspace: the handoff is recorded where every server finds it
// (engine.RoamingHandoffs), the session goes on with a fresh, empty
// workspace that is roaming too (freshRoaming), and the roaming one's
// container is left running, its lease let go, for whichever server the
// handle is given to (or removed by this server once the handoff expires
// untaken).
func handOverRoaming(ctx context.Context, h *handoffs, ttl time.Duration) (_ Handoff, err error) {
	s, m := h.s, h.s.m
	store, ok := m.eng.(engine.RoamingHandoffs)
	if !ok {
		return Handoff{}, errors.New("this engine cannot hand over a workspace any server may serve")
	}
	if s.checkpoints.HasCheckpoints() && !roamingStoresShared(&m.cfg) {
		return Handoff{}, errRoamingCheckpointsStay
	}
	ho := Handoff{Handle: keep.NewHandle(), Expires: time.Now().Add(ttl).UTC(), KeptContainer: true}
	fresh, err := freshRoaming(m, s)
	if err != nil {
		return Handoff{}, err
	}
	defer func() {
		if err != nil { // never given to the session: its lease and store go
			endRoamingStore(fresh, false)
			fresh.roaming.held.Release(context.WithoutCancel(ctx))
		}
	}()
	fresh.handoffs.useMeter(h.egressMeter())
	m.mu.Lock()
	if m.parkLimit != nil {
		// Counted with those parked here, under one lock: a crowd of
		// handoffs cannot leave more running containers than the server
		// would park.
		if err := m.parkLimit(len(m.parked) + m.parking + m.leftForAdoption.count()); err != nil {
			m.mu.Unlock()
			return Handoff{}, err
		}
	}
	m.parking++
	m.mu.Unlock()
	// Not under m.mu: an API call. A record whose session ends meanwhile
	// names a handle nobody was given, and goes when it expires.
	rec := engine.HandoffRecord{Digest: engine.HandleDigest(ho.Handle), Principal: s.principal, Profile: profileName(s.profile), Expires: ho.Expires}
	err = store.PutHandoff(ctx, s.roaming.name, rec)
	m.mu.Lock()
	m.parking--
	switch {
	case err != nil:
		m.mu.Unlock()
		return Handoff{}, err
	case m.closed || m.sessions[s.who.id()] != s:
		m.mu.Unlock()
		return Handoff{}, ErrSessionEnded
	}
	m.sessions[s.who.id()] = fresh
	m.mu.Unlock()
	s.roaming.handedOverUntil.Store(ho.Expires.UnixNano())
	s.end(ctx)
	m.log.Info("workspace handed over", "event", "handoff", "session", s.who.hash(), "container", s.name, "roaming", true, "expires", ho.Expires)
	return ho, nil
}

// freshRoaming returns the fresh, empty workspace the session s goes on
// with once its roaming workspace is handed over: a roaming one of its
// own (a new name, its lease held, its checkpoint store), so that the
// handle stays served by any server; its caller records the handle on it
// (RoamingNameOf). Its caller holds no lock: it makes API calls.
func freshRoaming(m *Manager, s *Session) (*Session, error) {
	store, _ := m.eng.(engine.KeptStore)
	name := engine.NewRoamingName()
	held, err := holdRoaming(m, store, s.who.hash(), SessionOptions{Roaming: name, Principal: s.principal, OnWanted: s.roaming.onWanted})
	if err != nil {
		return nil, fmt.Errorf("making the fresh workspace the handle goes on with: %w", err)
	}
	fresh := m.newSession(s.who.id(), newWarmKey())
	fresh.who.serve(s.who.id(), s.who.hash())
	fresh.principal, fresh.stdio = s.principal, s.stdio
	fresh.roaming = &roamingWorkspace{name: name, held: held, onWanted: s.roaming.onWanted}
	if err := openRoamingStore(&m.cfg, fresh); err != nil {
		held.Release(context.Background())
		return nil, err
	}
	// What the session took away from its egress stays away in the
	// workspace it goes on with, on whichever replica serves it next.
	fresh.egressPolicy.narrowing.Take(s.egressPolicy.narrowing.Taken())
	if err := fresh.egressPolicy.record(); err != nil {
		m.log.Error("recording the fresh roaming workspace's egress narrowing", "session", s.who.hash(), "err", err)
	}
	return fresh, nil
}

// RoamingNameOf is the name of s's roaming workspace, "" when it has none.
func RoamingNameOf(s *Session) string {
	if s == nil || s.roaming == nil {
		return ""
	}
	return s.roaming.name
}
