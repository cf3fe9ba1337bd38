package workspace

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/wink-mcp/wink-mcp/egress"
	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/workspace/keep"
)

// Limits of a handoff.
const (
	// DefaultHandoffTTL is how long a handle works unless the giver says.
	DefaultHandoffTTL = 15 * time.Minute
	// MaxHandoffTTL bounds how long a handle may work.
	MaxHandoffTTL = 24 * time.Hour
)

// ErrBadHandle is the one answer to a handle that is unknown, used,
// expired or another principal's: nothing can be learnt by probing.
var ErrBadHandle = errors.New("the handle is not accepted: it is unknown, already used, or expired (a handle works once, before its expiry, for clients with the same credentials)")

// Handoff is a workspace given a handle.
type Handoff struct {
	// Handle is what workspace_attach takes: 256 random bits, in hex.
	Handle  string
	Expires time.Time
	// KeptContainer says the container, and its jobs, go with the
	// workspace; otherwise a new container is made on its files.
	KeptContainer bool
	// Workspace names the kept workspace the files went to, when they
	// went to disk for another process.
	Workspace string
}

// Attached is a workspace a session took over.
type Attached struct {
	// KeptContainer says the container the giver used, and its jobs, came along.
	KeptContainer bool
	// Workspace is the kept workspace's name, when one was opened.
	Workspace string
	Info      ContainerInfo
}

// handoffs is the part of a session that hands its workspace over and
// takes over one handed to it (tools.Handoffs), and keeps the workspaces
// the session handed to another process while they wait on its disk.
//
// It holds its session, not a narrower set of functions: a handoff moves
// the session's whole life cycle (its container, disk, files and egress
// count, and its place among the manager's sessions), which Session owns
// under Session.mu and Manager.mu, and it takes those locks in the
// package's order, exactly as a Session method would.
type handoffs struct {
	s *Session
	// handedOver are the roots of the kept workspaces this session handed
	// to another process; while they wait (for an attach, or for their
	// export), they share its disk limit. Set before the session is
	// stored in the manager and never changed after, so read without a
	// lock.
	handedOver []string
}

// Handoff gives the workspace a one-time handle that works for ttl and
// sets it aside, and the session goes on with a fresh, empty one. Over
// stdio the workspace goes to disk, as a kept workspace another process
// can attach (its container and jobs are stopped); otherwise it stays in
// this process with its container and jobs.
func (h *handoffs) Handoff(ctx context.Context, ttl time.Duration) (Handoff, error) {
	s := h.s
	if ttl <= 0 || ttl > MaxHandoffTTL {
		return Handoff{}, fmt.Errorf("a handle works for 1 s to %s, not %s", MaxHandoffTTL, ttl)
	}
	s.mu.Lock() // a container being made (a prestart) is made first
	//lint:ignore SA2001 the empty critical section is the wait for it
	s.mu.Unlock()
	if n := s.active.Load(); n > 0 {
		return Handoff{}, fmt.Errorf("%d other calls of this session are still running in the workspace; hand it over when they have returned", n)
	}
	m := s.m
	if s.kept != nil && s.kept.held != nil {
		return Handoff{}, fmt.Errorf("kept workspace %q lives in the engine's store (the cluster), where a handle cannot reserve it yet; the next session opens it by its name instead", s.kept.name)
	}
	if s.stdio && m.cfg.FilesOnEngineHost {
		return Handoff{}, stdioHandoffRefusal(m.eng.Service())
	}
	if s.roaming != nil {
		return handOverRoaming(ctx, h, ttl)
	}
	// Over stdio the workspace goes to disk under this name.
	name, fromHandoff := "handoff-"+newWarmKey(), true // nobody can name it: reserved once written
	if s.stdio {
		if s.kept != nil {
			name, fromHandoff = s.kept.name, s.kept.fromHandoff
		}
		if err := h.checkHandoffDisk(); err != nil {
			return Handoff{}, err
		}
	}
	// Made before the manager's lock, as it takes the sessions' (see the
	// package doc's lock order); no one else has it until it is stored.
	fresh := m.newSession(s.who.id(), newWarmKey())
	fresh.who.serve(s.who.id(), s.who.hash())
	fresh.principal, fresh.stdio = s.principal, s.stdio
	// The session's count goes on (the workspace handed over shares it
	// until attached), and what it took away from its egress stays away.
	fresh.handoffs.useMeter(h.egressMeter())
	fresh.egressPolicy.narrowing.Take(s.egressPolicy.narrowing.Taken())
	if s.stdio {
		// It waits on the disk within the session's disk limit.
		fresh.handoffs.handedOver = h.handedOverAfter(keptRoot(m.cfg.CacheDir, name), fromHandoff)
	}
	m.mu.Lock()
	if m.closed || m.sessions[s.who.id()] != s {
		m.mu.Unlock()
		return Handoff{}, ErrSessionEnded
	}
	if !s.stdio {
		// Checked and counted under one lock, so a crowd of handoffs
		// cannot pass the limit together.
		if m.parkLimit != nil {
			if err := m.parkLimit(len(m.parked) + m.parking); err != nil {
				m.mu.Unlock()
				return Handoff{}, err
			}
		}
		m.parking++
	}
	m.sessions[s.who.id()] = fresh
	m.mu.Unlock()

	ho := Handoff{Handle: keep.NewHandle(), Expires: time.Now().Add(ttl).UTC()}
	if s.stdio {
		if err := h.persist(ctx, name, ho.Expires); err != nil {
			return Handoff{}, err
		}
		if fromHandoff {
			h.expireLater(name, ho.Expires)
		}
		ho.Workspace = name
		rec := keep.HandoffRecord{Workspace: name, Principal: s.principal, Expires: ho.Expires}
		if err := writeJSON(filepath.Join(m.cfg.CacheDir, keep.HandoffsDir, keep.HandleKey(ho.Handle)+".json"), rec); err != nil {
			return Handoff{}, fmt.Errorf("recording the handle: %w", err)
		}
		m.log.Info("workspace handed over", "event", "handoff", "session", s.who.hash(), "workspace", name, "expires", ho.Expires)
		return ho, nil
	}
	key := keep.HandleKey(ho.Handle)
	p := &parked{s: s, principal: s.principal, expires: ho.Expires}
	m.mu.Lock()
	m.parking--
	if m.parked == nil { // closed meanwhile: Close has ended every other session
		m.mu.Unlock()
		s.end(ctx)
		return Handoff{}, ErrSessionEnded
	}
	p.timer = time.AfterFunc(ttl, func() { m.expireParked(key) })
	m.parked[key] = p
	m.mu.Unlock()
	ho.KeptContainer = true
	m.log.Info("workspace handed over", "event", "handoff", "session", s.who.hash(), "container", s.name, "expires", ho.Expires)
	return ho, nil
}

// stdioHandoffRefusal says why a stdio session cannot hand over a
// workspace whose files are on the engine's host (Config.FilesOnEngineHost):
// a handoff to another process puts them on this machine's disk.
func stdioHandoffRefusal(svc engine.Service) error {
	where := "on the Podman host (--files-on-podman-host)"
	if svc.Pods {
		where = "in its Pod on the cluster (--engine kubernetes)"
	}
	return fmt.Errorf("a workspace whose files are %s can only be handed to a session of the same server, over HTTP or SSE (--transport http): "+
		"over stdio the handoff would put them on this machine's disk for another process, which only a workspace whose files are here can do", where)
}

// Attach takes over the workspace a handle names; the session's own, which
// must hold no work, is removed.
func (h *handoffs) Attach(ctx context.Context, handle string) (Attached, error) {
	s, m := h.s, h.s.m
	if len(handle) != 64 {
		return Attached{}, ErrBadHandle
	}
	if !h.discardable() {
		return Attached{}, errors.New("this session's workspace holds work (files written, commands run or checkpoints), which attaching would replace; " +
			"hand it over first (workspace_handoff), or attach from a new session")
	}
	key := keep.HandleKey(handle)
	m.mu.Lock()
	if m.closed || m.sessions[s.who.id()] != s {
		m.mu.Unlock()
		return Attached{}, ErrSessionEnded
	}
	if p, ok := m.parked[key]; ok && p.principal == s.principal && time.Now().Before(p.expires) {
		delete(m.parked, key)
		p.timer.Stop()
		taken := p.s
		// Calls that found it before it was handed over may be starting on
		// it: who it serves is replaced whole, never written field by
		// field. Its principal is the handle's, which is the session's, and
		// only sessions that are not stdio's park a workspace.
		taken.who.serve(s.who.id(), s.who.hash())
		if taken.proxy != nil {
			taken.proxy.SetID(taken.who.hash())
		}
		taken.lastUsed.Store(time.Now().UnixNano())
		m.sessions[s.who.id()] = taken
		m.mu.Unlock()
		h.takeMeterOf(taken)
		h.keepNarrowingIn(taken)
		s.end(ctx)
		m.log.Info("workspace attached", "event", "attach", "session", taken.who.hash(), "container", taken.name)
		return Attached{KeptContainer: true, Info: taken.Info()}, nil
	}
	m.mu.Unlock()
	if err := h.checkAttachDisk(key); err != nil {
		return Attached{}, err
	}
	name, err := m.handedOverDisk.claim(key, s.principal)
	if err != nil {
		return Attached{}, err
	}
	taken, err := h.newKeptSessionFor(name)
	if err != nil {
		return Attached{}, err
	}
	h.takeMeterOf(taken)
	h.keepNarrowingIn(taken)
	s.end(ctx)
	m.log.Info("workspace attached", "event", "attach", "session", taken.who.hash(), "workspace", name)
	return Attached{Workspace: name, Info: taken.Info()}, nil
}

// newKeptSessionFor replaces the session with one that owns the kept
// workspace name, reserved for the handle just claimed.
func (h *handoffs) newKeptSessionFor(name string) (*Session, error) {
	s, m := h.s, h.s.m
	awaitKeptOwner(m.cfg.CacheDir, name, m.log)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || m.sessions[s.who.id()] != s {
		return nil, ErrSessionEnded
	}
	taken, err := m.newKeptSession(s.who.id(), s.who.hash(), SessionOptions{Workspace: name, Principal: s.principal, Stdio: s.stdio, handedOver: true}, nil)
	if err != nil {
		return nil, err
	}
	taken.handoffs.handedOver = h.handedOver // still waiting within this session's disk limit
	if p := forkProfile(&m.cfg, taken.kept.root); p != nil {
		taken.profileSwitch.setLocked(p) // a fork runs its source's profile
	}
	m.sessions[s.who.id()] = taken
	return taken, nil
}

// discardable says whether the session's workspace holds nothing an
// attach would lose: no tool wrote, no command ran, no checkpoint was
// taken; a kept workspace is only let go, never lost.
func (h *handoffs) discardable() bool {
	s := h.s
	if s.kept != nil {
		return true
	}
	return len(s.touched.List()) == 0 && !s.ranCommands.Load() && !s.checkpoints.HasCheckpoints()
}

// retire stops the session's container and jobs and unmounts its disk,
// keeping its files, as the session ends.
func (h *handoffs) retire(ctx context.Context) {
	s := h.s
	unlock, ok := s.beginEnd()
	defer unlock()
	if ok {
		_ = s.removeOrRetryLocked(ctx)
		s.unmountDiskLocked()
	}
}

// useMeter makes mt count the session's egress, its proxy's included: a
// workspace given to another session, or a session's fresh workspace after
// a handoff, counts against the session that has it, never from zero.
func (h *handoffs) useMeter(mt *egress.Meter) {
	s := h.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.meter = mt
	if s.proxy != nil {
		s.proxy.SetMeter(mt)
	}
	if s.kept != nil && s.kept.egress != nil {
		s.kept.egress.Follow(mt)
	}
}

// egressMeter returns the meter the session counts its egress with.
func (h *handoffs) egressMeter() *egress.Meter {
	s := h.s
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.meter
}

// takeMeterOf makes the session's own meter count taken's egress, raised
// first to what taken's has counted: taking a workspace over never gives
// a session more of its cap back.
func (h *handoffs) takeMeterOf(taken *Session) {
	mt := h.egressMeter()
	mt.RaiseTo(taken.handoffs.egressMeter().Used())
	taken.handoffs.useMeter(mt)
}
