package egress

import (
	"sync"
	"sync/atomic"
)

// meterSteps is how many steps of its cap a meter's count tells its
// listeners of crossing (Listen): one each 1/16 of the cap.
const meterSteps = 16

// Meter counts the bytes a session's proxies carry against the session's
// cap (--egress-max-bytes). It belongs to whatever owns the cap, not to a
// proxy: a session gives the same meter to every proxy it makes (a new
// profile, a handed-over workspace), so no change of proxy starts the
// count again. It is safe for concurrent use.
type Meter struct {
	used atomic.Int64
	max  int64
	// total, when set, also counts every byte this meter counts.
	total *atomic.Int64
	// budget, when set, is a second cap the bytes count against, shared
	// with other meters (the client's egress quota).
	budget atomic.Pointer[budgetRef]

	mu        sync.Mutex
	listeners map[*func()]struct{}
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

// AlsoCountIn makes m add every byte it counts to total as well (a
// server's count of all its sessions' egress), and returns m. It must be
// called before m counts anything. Bytes a meter is raised by (RaiseTo)
// were carried before, so total does not get them.
func (m *Meter) AlsoCountIn(total *atomic.Int64) *Meter {
	m.total = total
	return m
}

// Budget is a cap several meters count against together: a client's
// egress quota over all its sessions.
type Budget interface {
	// Add counts n bytes carried.
	Add(n int64)
	// Over says the cap is reached.
	Over() bool
	// Refusal says why a connection was refused past the cap, and what
	// to do; it is called once per refused connection.
	Refusal() (reason, remedy string)
}

// budgetRef holds a Budget in an atomic.Pointer.
type budgetRef struct{ Budget }

// ShareBudget makes m count its bytes against b too (nil: no budget), from
// now on; a meter's owner sets it when it learns whose bytes they are (a
// pooled session taken by a client).
func (m *Meter) ShareBudget(b Budget) {
	if b == nil {
		m.budget.Store(nil)
		return
	}
	m.budget.Store(&budgetRef{b})
}

// Budget returns the budget m counts against too, nil for none.
func (m *Meter) Budget() Budget {
	if b := m.budget.Load(); b != nil {
		return b.Budget
	}
	return nil
}

// budgetOver returns the shared budget when it is reached, else nil.
func (m *Meter) budgetOver() Budget {
	if b := m.Budget(); b != nil && b.Over() {
		return b
	}
	return nil
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
		if n <= cur {
			return
		}
		if m.used.CompareAndSwap(cur, n) {
			m.tell()
			return
		}
	}
}

// Listen makes the meter call f when its count crosses each 1/16 of its
// cap, is raised, or a connection it counted ends: the moments its owner
// records the count at (a kept workspace, so that a server killed with
// SIGKILL loses little of it). f runs on the connection's path and must
// not block. It returns the function that stops the calls.
func (m *Meter) Listen(f func()) (stop func()) {
	key := &f
	m.mu.Lock()
	if m.listeners == nil {
		m.listeners = map[*func()]struct{}{}
	}
	m.listeners[key] = struct{}{}
	m.mu.Unlock()
	return func() {
		m.mu.Lock()
		delete(m.listeners, key)
		m.mu.Unlock()
	}
}

// over says the cap, or the shared budget, is reached.
func (m *Meter) over() bool { return m.used.Load() >= m.max || m.budgetOver() != nil }

func (m *Meter) add(n int) {
	if n <= 0 {
		return
	}
	now := m.used.Add(int64(n))
	if m.total != nil {
		m.total.Add(int64(n))
	}
	if b := m.budget.Load(); b != nil {
		b.Add(int64(n))
	}
	if step := max(m.max/meterSteps, 1); (now-int64(n))/step != now/step {
		m.tell()
	}
}

// ended is told that a connection it counted ended.
func (m *Meter) ended() { m.tell() }

// tell calls the listeners.
func (m *Meter) tell() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for f := range m.listeners {
		(*f)()
	}
}
