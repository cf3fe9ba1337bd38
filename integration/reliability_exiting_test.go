package integration

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// TestReliabilityExitingOwner starts a server again while the one it
// replaces, killed with SIGKILL, still exits: a thread of it is frozen
// through the kill, as one stuck in a write on a loaded disk is, so its
// main thread is a zombie (all a client sees) and its locks are held. The
// new server must wait for them, neither refusing the kept workspace as
// owned by the dead process nor leaving its container and directory.
func TestReliabilityExitingOwner(t *testing.T) {
	const rounds = 2
	broken := 0
	t.Run("a kept workspace is waited for, not refused", func(t *testing.T) {
		cache := t.TempDir()
		opts := startOptions{cache: cache, args: []string{"--workspace", "exiting"}}
		p := start(t, opts)
		for round := range rounds {
			p.call("write_file", map[string]any{"file_path": "round.txt", "content": fmt.Sprint(round)})
			old := p.prefix
			next, release := p.restartWhileExiting(opts)
			res := next.call("read_file", map[string]any{"file_path": "round.txt"})
			release()
			switch {
			case res.IsError:
				broken++
				t.Errorf("round %d: the kept workspace after the restart: %s", round, textOf(res))
			case next.logs.find(lockWaitLog, nil) == nil:
				broken++
				t.Errorf("round %d: the new server did not wait for the lock: the test did not try what it names", round)
			}
			waitUntil(t, time.Minute, "the killed server's container to go", func() bool { return len(containersNamed(t, old)) == 0 })
			p = next
		}
	})
	t.Run("the killed server's container and directory are swept", func(t *testing.T) {
		cache := t.TempDir()
		opts := startOptions{cache: cache}
		p := start(t, opts)
		for round := range rounds {
			p.run("true")
			old := p.prefix
			before, _ := filepath.Glob(filepath.Join(cache, "instances", "*"))
			next, release := p.restartWhileExiting(opts)
			next.waitLog(time.Minute, "orphan sweep done", nil)
			release()
			after, _ := filepath.Glob(filepath.Join(cache, "instances", "*"))
			if left := containersNamed(t, old); len(left) > 0 || len(after) != 1 || len(before) != 1 || after[0] == before[0] {
				broken++
				t.Errorf("round %d: after the sweep the killed server's containers %v are left, instance directories %v (were %v)", round, left, after, before)
			}
			p = next
		}
	})
	recordPromise(promiseFigure{Class: "restart while the killed server still exits: a thread of it frozen through SIGKILL holds its locks while its main thread is a zombie", Tried: 2 * rounds, Broken: broken,
		Measured: fmt.Sprintf("%d times the next server waited for the lock and opened the kept workspace (none refused as owned by the dead process); %d times it swept the killed server's container and directory", rounds, rounds)})
}
