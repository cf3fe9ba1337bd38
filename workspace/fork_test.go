package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// A crowd of fork calls from sessions of one principal racing for the last places of --quota-forks gets
// exactly those places, each refusal naming the flag and the limit;
// another principal's forks are counted apart, and a claimed fork no
// longer counts.
func TestForksRacingForTheQuotaGetExactlyIt(t *testing.T) {
	m, _, _ := newTestManager(t, func(c *Config) { c.ForkLimit = 4 })
	m.Register("a", SessionOptions{Principal: "pa"})
	m.Register("b", SessionOptions{Principal: "pb"})
	a, _ := m.Session("a")
	b, _ := m.Session("b")
	echo(t, a, "true")
	var wg sync.WaitGroup
	var mu sync.Mutex
	var made []Fork
	var refused []error
	for i := range 8 { // sessions of one principal: their own gates do not order them
		id := "a" + string(rune('1'+i))
		m.Register(id, SessionOptions{Principal: "pa"})
		s, _ := m.Session(id)
		echo(t, s, "true")
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := s.forks.Fork(ctx, 1, "", time.Minute)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				refused = append(refused, err)
			} else {
				made = append(made, f...)
			}
		}()
	}
	wg.Wait()
	if len(made) != 4 || len(refused) != 4 {
		t.Fatalf("8 racing forks with room for 4: %d made, %d refused (%v)", len(made), len(refused), refused)
	}
	for _, err := range refused {
		if !strings.Contains(err.Error(), "limit of 4 forks") || !strings.Contains(err.Error(), "--quota-forks") {
			t.Errorf("refusal: %v", err)
		}
	}
	if _, err := b.forks.Fork(ctx, 4, "", time.Minute); err != nil {
		t.Errorf("another principal's forks: %v", err)
	}
	m.Register("c", SessionOptions{Principal: "pa"})
	c, _ := m.Session("c")
	if _, err := c.handoffs.Attach(ctx, made[0].Handle); err != nil {
		t.Fatalf("claiming a fork: %v", err)
	}
	if _, err := a.forks.Fork(ctx, 1, "", time.Minute); err != nil {
		t.Errorf("a fork after one was claimed: %v", err)
	}
}

// Bad arguments, forks the cache disk has no room for beside a new
// session, and a server without forks get errors naming what to
// change, and leave nothing on disk.
func TestForkRefusalsNameTheLimit(t *testing.T) {
	m, _, _ := newTestManager(t, nil)
	m.Register("a", SessionOptions{Principal: "p"})
	a, _ := m.Session("a")
	echo(t, a, "true")
	for _, tc := range []struct {
		count      int
		checkpoint string
		ttl        time.Duration
		want       string
	}{
		{0, "", time.Minute, "count must be 1 to 16, not 0"},
		{17, "", time.Minute, "count must be 1 to 16, not 17"},
		{1, "", 0, "a fork's handle works for 1 s to 24h0m0s"},
		{1, "", 25 * time.Hour, "a fork's handle works for 1 s to 24h0m0s"},
		{1, "c1", time.Minute, "this workspace has no checkpoints"},
	} {
		if _, err := a.forks.Fork(ctx, tc.count, tc.checkpoint, tc.ttl); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Fork(%d, %q, %s) = %v, want %q", tc.count, tc.checkpoint, tc.ttl, err, tc.want)
		}
	}
	// Forks leave a new session's disk limit free on the cache disk.
	m.cfg.DiskBytes = 1 << 60
	if _, err := a.forks.Fork(ctx, 1, "", time.Minute); err == nil || !strings.Contains(err.Error(), "free for new sessions (one --disk-limit") {
		t.Errorf("forks past the cache disk's room for a session: %v", err)
	}
	m.cfg.ForkLimit = 0
	if _, err := a.forks.Fork(ctx, 1, "", time.Minute); err == nil || !strings.Contains(err.Error(), "--quota-forks 0") {
		t.Errorf("forks turned off: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(m.cfg.CacheDir, workspacesDir)); len(entries) != 0 {
		t.Errorf("refused forks left %d workspaces", len(entries))
	}
}
