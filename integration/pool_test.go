package integration

import (
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// pooledNames returns the containers the server logged as pooled and ready.
func (p *proc) pooledNames() []string {
	var names []string
	for _, rec := range p.logs.records() {
		if rec["msg"] == "pooled container ready" {
			names = append(names, rec["container"].(string))
		}
	}
	return names
}

// waitPooled waits until the server has made n pooled containers in all.
func (p *proc) waitPooled(n int) []string {
	p.t.Helper()
	waitUntil(p.t, 2*time.Minute, fmt.Sprintf("%d pooled containers", n), func() bool { return len(p.pooledNames()) >= n })
	return p.pooledNames()
}

// TestPooledContainerIsOneASessionWouldHaveHad checks a session handed a
// pooled container: it is one of those made ahead, with every hardening
// setting and an empty workspace, and the pool makes another to replace it.
func TestPooledContainerIsOneASessionWouldHaveHad(t *testing.T) {
	p := launch(t, startOptions{transport: "http", args: []string{"--warm", "2"}})
	pooled := p.waitPooled(2)
	p.connect(nil)
	name := p.container()
	if !slices.Contains(pooled, name) {
		t.Fatalf("the session got %s, not one of the pooled %v", name, pooled)
	}
	if p.logs.find("workspace taken_from_pool", map[string]any{"container": name}) == nil {
		t.Error("no taken_from_pool event")
	}
	if got := p.run("ls", "-A", "/workspace"); got.Stdout != "" {
		t.Errorf("a pooled workspace holds %q", got.Stdout)
	}
	checkHardening(t, p, name)
	p.waitPooled(3)
}

// TestPoolServesABurstAndLeavesNothing opens more sessions at once than the
// pool holds: each gets a container of its own (pooled or made for it), its
// files are its own, ending it removes its container, and stopping the
// server removes the pool.
func TestPoolServesABurstAndLeavesNothing(t *testing.T) {
	const sessions = 10
	p := launch(t, startOptions{transport: "http", args: []string{"--warm", "4"}})
	p.waitPooled(4)
	var (
		mu    sync.Mutex
		names = map[string]bool{}
		wg    sync.WaitGroup
	)
	for i := range sessions {
		wg.Go(func() {
			q := &proc{t: t, transport: "http", url: p.url, logs: p.logs, prefix: p.prefix, cache: p.cache}
			q.connect(nil)
			defer q.client.Close()
			mark := fmt.Sprintf("session-%d", i)
			q.run("sh", "-c", "echo "+mark+" > who")
			if got := q.run("sh", "-c", "ls; cat who"); got.Stdout != "who\n"+mark+"\n" {
				t.Errorf("session %d sees %q", i, got.Stdout)
			}
			mu.Lock()
			names[q.container()] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(names) != sessions {
		t.Errorf("%d sessions had %d containers", sessions, len(names))
	}
	waitUntil(t, time.Minute, "the sessions' containers to go", func() bool {
		for _, c := range containersNamed(t, p.prefix) {
			if names[c] {
				return false
			}
		}
		return true
	})
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.waitExit(time.Minute)
	if left := containersNamed(t, p.prefix); len(left) != 0 {
		t.Errorf("containers left after shutdown: %v", left)
	}
	if dirs := sessionDirs(t, p.cache); len(dirs) != 0 {
		t.Errorf("directories left after shutdown: %v", dirs)
	}
}

// TestPoolIsSweptAfterKill9 kills a server holding a pool; the next server
// removes the pooled containers and their directories as orphans.
func TestPoolIsSweptAfterKill9(t *testing.T) {
	cache := t.TempDir()
	dead := launch(t, startOptions{transport: "http", cache: cache, args: []string{"--warm", "3"}})
	pooled := dead.waitPooled(3)
	if err := dead.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	dead.waitExit(10 * time.Second)
	for _, name := range pooled {
		if !containerExists(t, name) {
			t.Fatalf("pooled %s vanished by itself; the test proves nothing", name)
		}
	}
	next := launch(t, startOptions{transport: "http", cache: cache, args: unpooled})
	next.waitLog(time.Minute, "orphan sweep done", nil)
	for _, name := range pooled {
		if containerExists(t, name) {
			t.Errorf("pooled orphan %s still exists", name)
		}
	}
	if dirs := sessionDirs(t, cache); len(dirs) != 0 {
		t.Errorf("directories left: %v", dirs)
	}
}

// TestSessionEndingBeforeItsFirstCallReturnsNothingToThePool ends a session
// that was handed a pooled container and never called a tool: the
// container goes with it, and is never handed to another session.
func TestSessionEndingBeforeItsFirstCallReturnsNothingToThePool(t *testing.T) {
	p := launch(t, startOptions{transport: "http", args: []string{"--warm", "1"}})
	pooled := p.waitPooled(1)
	p.connect(nil)
	waitUntil(t, 10*time.Second, "the session to take the pooled container", func() bool {
		return p.logs.find("workspace taken_from_pool", map[string]any{"container": pooled[0]}) != nil
	})
	p.endSession()
	waitUntil(t, 30*time.Second, "its container to go", func() bool { return !containerExists(t, pooled[0]) })
	p.connect(nil)
	if name := p.container(); name == pooled[0] {
		t.Error("a container handed to an ended session was handed out again")
	}
}
