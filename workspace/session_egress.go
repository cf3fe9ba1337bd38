package workspace

import (
	"errors"
	"fmt"
	"sync"

	"github.com/wink-mcp/wink-mcp/egress"
)

// serverEgressSource is the Source of the server's own egress patterns.
const serverEgressSource = "the server's --egress"

// ErrNoEgress answers a drop in a session without egress.
var ErrNoEgress = errors.New("this session has no egress to drop from: the workspace has no network at all")

// EgressReport is what a session may reach, after a workspace_egress call.
type EgressReport struct {
	// On says the session has an egress proxy at all.
	On bool
	// Locked says the session locked its egress: nothing is reachable.
	Locked bool
	// Grants are the patterns, dropped ones included.
	Grants []egress.Grant
	// Cut is how many open connections the call cut.
	Cut int
	// Ask says the user is asked about hosts no pattern allows.
	Ask bool
}

// egressPolicy is the part of a session that lists its egress and takes
// from it what the model drops or locks (tools.EgressPolicy), for the
// rest of the session: its Narrowing is shared by every proxy the
// session makes, whatever its profile. In a kept workspace it is recorded
// (kept_narrowing.go), so that no later session on it has it back.
type egressPolicy struct {
	s         *Session
	narrowing *egress.Narrowing
	// recording orders the writes of the record.
	recording sync.Mutex
}

// proxy returns the session's current egress proxy, nil without one.
func (e *egressPolicy) proxy() *egress.Session {
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	return e.s.proxy
}

// EgressReport lists what the session may reach.
func (e *egressPolicy) EgressReport() EgressReport {
	r := EgressReport{Locked: e.narrowing.Locked(), Ask: e.s.m.cfg.EgressAsk}
	if p := e.proxy(); p != nil {
		r.On, r.Grants = true, p.Grants()
	}
	return r
}

// DropEgress drops pattern (as EgressReport lists it) for the rest of the
// session (and of a kept workspace, recorded before it returns) and cuts
// the connections it carried.
func (e *egressPolicy) DropEgress(pattern string) (EgressReport, error) {
	p := e.proxy()
	if p == nil {
		return e.EgressReport(), ErrNoEgress
	}
	if err := e.canNarrow(); err != nil {
		return e.EgressReport(), err
	}
	cut, err := p.Drop(pattern)
	if err != nil {
		return e.EgressReport(), err
	}
	e.s.m.log.Info("egress pattern dropped", "event", "egress_narrowed", "session", e.s.who.hash(), "pattern", pattern, "cut", cut)
	r := e.EgressReport()
	r.Cut = cut
	if err := e.record(); err != nil {
		return r, fmt.Errorf("%s is dropped: %w", pattern, err)
	}
	return r, nil
}

// LockEgress refuses every connection for the rest of the session (and
// of a kept workspace, recorded before it returns) and cuts the open ones.
func (e *egressPolicy) LockEgress() (EgressReport, error) {
	if err := e.canNarrow(); err != nil {
		return e.EgressReport(), err
	}
	cut := e.narrowing.Lock()
	e.s.m.log.Info("egress locked", "event", "egress_narrowed", "session", e.s.who.hash(), "cut", cut)
	r := e.EgressReport()
	r.Cut = cut
	if err := e.record(); err != nil {
		return r, fmt.Errorf("egress is locked: %w", err)
	}
	return r, nil
}
