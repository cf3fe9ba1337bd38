package workspace

// Containers counts this manager's containers now: warm ones waiting in
// the pool for a session, and in-use ones, the sessions' containers with
// an open channel to their agent. It is safe for concurrent use and
// cheap: nothing is asked of the engine.
func (m *Manager) Containers() (warm, inUse int) {
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
func (m *Manager) WarmTarget() int { return m.cfg.Warm }

// EgressBytes is how many bytes the sessions' egress proxies have carried,
// both ways, since this manager began.
func (m *Manager) EgressBytes() int64 { return m.egressCarried.Load() }
