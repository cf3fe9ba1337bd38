package workspace

import (
	"context"
	"time"
)

// parked is a workspace handed over in this process and not yet attached:
// it keeps its container and jobs, and a slot of the server's
// (SetParkLimit).
type parked struct {
	s         *Session
	principal string
	expires   time.Time
	timer     *time.Timer
}

// SetParkLimit sets what says why one more workspace may not be handed
// over to wait in this process, given how many wait already (the HTTP
// server counts them against --max-sessions). Set it before serving.
func (m *Manager) SetParkLimit(limit func(waiting int) error) {
	m.mu.Lock()
	m.parkLimit = limit
	m.mu.Unlock()
}

// CountParked calls count with how many handed-over workspaces wait in
// this process for workspace_attach, each with its container and jobs,
// holding the lock a handoff counts them under (SetParkLimit): what count
// decides cannot interleave with a handoff's own check. count must not
// call the Manager.
func (m *Manager) CountParked(count func(waiting int)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	count(len(m.parked) + m.parking)
}

// expireParked ends a workspace handed over in this process that nobody
// attached in time.
func (m *Manager) expireParked(key string) {
	m.mu.Lock()
	p, ok := m.parked[key]
	delete(m.parked, key)
	if ok {
		m.ending.Add(1) // Close waits for it
	}
	m.mu.Unlock()
	if !ok {
		return
	}
	defer m.ending.Done()
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.APITimeout)
	defer cancel()
	m.log.Info("a handed-over workspace was not attached in time and is removed", "event", "handoff_expired", "container", p.s.name)
	p.s.end(ctx)
}
