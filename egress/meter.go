package egress

import "sync/atomic"

// Meter counts the bytes a session's proxies carry against the session's
// cap (--egress-max-bytes). It belongs to whatever owns the cap, not to a
// proxy: a session gives the same meter to every proxy it makes (a new
// profile, a handed-over workspace), so no change of proxy starts the
// count again. It is safe for concurrent use.
type Meter struct {
	used atomic.Int64
	max  int64
}

// NewMeter returns a meter of cap limit (DefaultMaxBytes when limit <= 0)
// that has counted used bytes already.
func NewMeter(limit, used int64) *Meter {
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	m := &Meter{max: limit}
	m.used.Store(max(used, 0))
	return m
}

// Used returns the bytes counted so far.
func (m *Meter) Used() int64 { return m.used.Load() }

// Max returns the cap.
func (m *Meter) Max() int64 { return m.max }

// RaiseTo makes the count at least n: a session that takes over a
// workspace takes over what the workspace has carried, never less.
func (m *Meter) RaiseTo(n int64) {
	for {
		cur := m.used.Load()
		if n <= cur || m.used.CompareAndSwap(cur, n) {
			return
		}
	}
}

// over says the cap is reached.
func (m *Meter) over() bool { return m.used.Load() >= m.max }

func (m *Meter) add(n int) { m.used.Add(int64(n)) }
