package workspace

import (
	"errors"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/testwait"
	"github.com/wink-mcp/wink-mcp/workspace/pool"
)

// readyEntries returns the pool's ready entries' container names.
func readyEntries(p *warmPool) []string {
	var names []string
	for _, e := range p.Ready() {
		names = append(names, e.name)
	}
	return names
}

func TestPoolHandsEachNewSessionAReadyContainerAndRefills(t *testing.T) {
	m, eng, logs := newTestManager(t, func(c *Config) { c.Warm = 2 })
	testwait.For(t, "a full pool", func() bool { return len(readyEntries(m.pool)) == 2 })
	pooled := readyEntries(m.pool)
	s, _ := m.Session("first")
	if !slices.Contains(pooled, s.name) {
		t.Fatalf("session got %s, not one of the pooled %v", s.name, pooled)
	}
	if res := echo(t, s, "ls", "-A"); res.Stdout != "" {
		t.Errorf("a pooled workspace holds %q", res.Stdout)
	}
	echo(t, s, "sh", "-c", "echo mine > f")
	if eng.creates != 2 && eng.creates != 3 {
		t.Errorf("%d containers made", eng.creates)
	}
	testwait.For(t, "the pool to refill", func() bool { return len(readyEntries(m.pool)) == 2 })
	if !slices.Contains(logs.events(), EventTakenFromPool) {
		t.Errorf("events %v lack %s", logs.events(), EventTakenFromPool)
	}
	// Another session gets another container, without s's file.
	o, _ := m.Session("second")
	if o.name == s.name || o.dir == s.dir {
		t.Fatal("two sessions share a pooled container")
	}
	if res := echo(t, o, "ls", "-A"); res.Stdout != "" {
		t.Errorf("the second session sees %q", res.Stdout)
	}
}

func TestPoolNeverHandsOutAContainerThatDiedWhileWaiting(t *testing.T) {
	m, eng, _ := newTestManager(t, func(c *Config) { c.Warm = 1 })
	testwait.For(t, "a full pool", func() bool { return len(readyEntries(m.pool)) == 1 })
	dead := readyEntries(m.pool)[0]
	eng.kill(dead)
	e := m.pool.Ready()[0]
	waitChannelEnd(t, e)
	s, _ := m.Session("s")
	if s.name == dead {
		t.Fatal("a dead pooled container was handed out")
	}
	echo(t, s, "true")
	testwait.For(t, "the dead container removed", func() bool {
		eng.mu.Lock()
		defer eng.mu.Unlock()
		_, ok := eng.containers[dead]
		return !ok
	})
}

func TestManyNewSessionsAtOnceEachGetTheirOwnContainer(t *testing.T) {
	m, _, _ := newTestManager(t, func(c *Config) { c.Warm = 4 })
	testwait.For(t, "a full pool", func() bool { return len(readyEntries(m.pool)) == 4 })
	var wg sync.WaitGroup
	sessions := make([]*Session, 12)
	for i := range sessions {
		wg.Go(func() {
			sessions[i], _ = m.Session(string(rune('a' + i)))
			echo(t, sessions[i], "sh", "-c", "echo "+string(rune('a'+i))+" > who")
		})
	}
	wg.Wait()
	names := map[string]bool{}
	for i, s := range sessions {
		names[s.name] = true
		if res := echo(t, s, "cat", "who"); res.Stdout != string(rune('a'+i))+"\n" {
			t.Errorf("session %d reads %q", i, res.Stdout)
		}
	}
	if len(names) != len(sessions) {
		t.Errorf("%d sessions got %d containers", len(sessions), len(names))
	}
}

func TestCloseRemovesThePool(t *testing.T) {
	m, eng, _ := newTestManager(t, func(c *Config) { c.Warm = 3 })
	testwait.For(t, "a full pool", func() bool { return len(readyEntries(m.pool)) == 3 })
	dirs := []string{}
	for _, e := range m.pool.Ready() {
		dirs = append(dirs, e.dir)
	}
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if eng.count() != 0 {
		t.Errorf("%d containers left after Close", eng.count())
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("pooled directory %s left: %v", d, err)
		}
	}
}

// A pool that cannot make containers backs off, and Close still returns.
func TestPoolThatCannotMakeContainersClosesCleanly(t *testing.T) {
	m, eng, logs := newTestManager(t, func(c *Config) { c.Warm = 8 })
	eng.mu.Lock()
	eng.startErr = errors.New("runtime exploded")
	eng.mu.Unlock()
	// Two rounds of failures: more than one round's worth of them at once.
	testwait.For(t, "two rounds of failures", func() bool {
		return logs.count("making a pooled container failed") >= 2*pool.Parallel
	})
	done := make(chan error, 1)
	go func() { done <- m.Close(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close hung on a pool whose containers all failed")
	}
	if eng.count() != 0 {
		t.Errorf("%d containers left", eng.count())
	}
}
