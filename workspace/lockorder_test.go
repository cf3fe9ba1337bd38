package workspace

import (
	"fmt"
	"os"
	"runtime/pprof"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/testwait"
)

// deadlockTimeout is how long a step that takes a few milliseconds may
// take before the test calls it a deadlock.
const deadlockTimeout = 20 * time.Second

// within runs f and fails the test, with every goroutine's stack, when it
// has not returned after deadlockTimeout; it reports whether it returned.
func within(t *testing.T, what string, f func()) bool {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
		return true
	case <-time.After(deadlockTimeout):
		pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
		t.Errorf("%s has not returned after %s: a deadlock", what, deadlockTimeout)
		return false
	}
}

// The manager never waits for a session's lock while it holds its own:
// a goroutine holding a pooled container's lock, as a session's end or
// creation holds it, may take the manager's (as a removal to retry does),
// while a new session is given that container.
func TestManagerNeverWaitsForASessionLock(t *testing.T) {
	m, _, _ := newTestManager(t, func(c *Config) { c.Warm = 1 })
	testwait.For(t, "a full pool", func() bool { return len(readyEntries(m.pool)) == 1 })
	e := m.pool.Ready()[0]

	e.mu.Lock()
	var got *Session
	handedOut := within(t, "a new session taking the pooled container while its lock is held", func() { got, _ = m.Session("new") })
	reached := within(t, "the manager's lock, taken under the pooled container's", func() { m.CountParked(func(int) {}) })
	e.mu.Unlock()
	if handedOut && reached && got != e {
		t.Errorf("the new session got %s, not the pooled %s", got.name, e.name)
	}
}

// A crowd of sessions going through every transition that takes the
// manager's lock and a session's (new sessions from the pool, handoffs and
// attaches, ends whose removal fails and is retried, idle clean-ups, the
// server's slot count) never deadlocks. Run it with -race.
func TestTransitionsNeverDeadlock(t *testing.T) {
	m, eng, _ := newTestManager(t, func(c *Config) { c.Warm = 2; c.IdleTimeout = 50 * time.Millisecond })
	const sessions, rounds = 6, 4
	ok := within(t, "a crowd of sessions handing over, attaching and ending", func() {
		var wg sync.WaitGroup
		for i := range sessions {
			wg.Go(func() {
				for r := range rounds {
					giver, taker := fmt.Sprintf("g%d-%d", i, r), fmt.Sprintf("t%d-%d", i, r)
					m.Register(giver, SessionOptions{Principal: "p"})
					m.Register(taker, SessionOptions{Principal: "p"})
					g, err := m.Session(giver)
					if err != nil {
						t.Error(err)
						return
					}
					if _, err := g.files.WriteFile(ctx, "f", "x"); err != nil {
						t.Error(err)
						return
					}
					h, err := g.handoffs.Handoff(ctx, time.Minute)
					if err != nil {
						t.Error(err)
						return
					}
					eng.mu.Lock()
					eng.removeFailures++ // an end whose removal is retried, from under the session's lock
					eng.mu.Unlock()
					tk, _ := m.Session(taker)
					wg.Go(func() { m.EndSession(ctx, giver) })
					wg.Go(func() { m.CountParked(func(int) {}) })
					if _, err := tk.handoffs.Attach(ctx, h.Handle); err != nil {
						t.Error(err)
					}
					wg.Go(func() { tk.cleanupIfIdle(ctx, 0) }) // as the reaper does
					m.EndSession(ctx, taker)
				}
			})
		}
		wg.Wait()
	})
	if !ok {
		t.FailNow()
	}
}
