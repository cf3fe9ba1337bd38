package workspace

import "github.com/wink-mcp/wink-mcp/egress"

// Counts reads what a manager holds now, for the server's metrics. It is
// safe for concurrent use and cheap: nothing is asked of the engine.
type Counts struct{ m *Manager }

// Counts returns the manager's counts.
func (m *Manager) Counts() Counts { return Counts{m} }

// Containers counts the manager's containers now: warm ones waiting in
// the pool for a session, and in-use ones, the sessions' containers with
// an open channel to their agent.
func (c Counts) Containers() (warm, inUse int) {
	m := c.m
	if m.pool != nil {
		warm = len(m.pool.Ready())
	}
	m.mu.Lock()
	sessions := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		sessions = append(sessions, s)
	}
	m.mu.Unlock()
	// A session's lock comes before the manager's (see the package doc):
	// each is taken after the manager's is let go.
	for _, s := range sessions {
		s.mu.Lock()
		if s.client != nil {
			inUse++
		}
		s.mu.Unlock()
	}
	return warm, inUse
}

// WarmTarget is how many containers the warm pool keeps ready (--warm).
func (c Counts) WarmTarget() int { return c.m.cfg.Warm }

// EgressBytes is how many bytes the sessions' egress proxies have carried,
// both ways, since the manager began.
func (c Counts) EgressBytes() int64 { return c.m.egressCarried.Load() }

// ArtefactCache returns the artefact cache every session's proxy shares,
// or nil without --egress-cache.
func (c Counts) ArtefactCache() *egress.Cache {
	if c.m.trust == nil {
		return nil
	}
	for _, a := range c.m.trust.artefacts {
		return a.Cache // one cache, whichever hosts
	}
	return nil
}
