package workspace

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/engine"
)

// roamingLeases is an engine whose roaming workspaces' leases are names:
// only RoamingNames is reached by the store sweep.
type roamingLeases struct {
	engine.Engine
	engine.RoamingHandoffs
	names []string
}

func (r roamingLeases) RoamingNames(context.Context) ([]string, error) { return r.names, nil }

// TestSweepRoamingStores: the sweep deletes the shared checkpoint store
// of a roaming workspace with no lease and no holder, once, of two
// servers sweeping at once; it keeps one whose lease exists, one a
// session holds, a kept workspace's and one being made (no lock file
// yet); without a shared checkpoint directory it touches nothing.
func TestSweepRoamingStores(t *testing.T) {
	t.Parallel()
	shared := t.TempDir()
	live, ended, held, making := engine.NewRoamingName(), engine.NewRoamingName(), engine.NewRoamingName(), engine.NewRoamingName()
	for _, name := range []string{live, ended, held, "proj"} {
		dir, _ := KeptStoreDir(shared, name)
		f, err := lockKeptStore(dir, name, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "checkpoint"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if name == held {
			defer f.Close()
		} else {
			f.Close()
		}
	}
	if err := os.MkdirAll(filepath.Join(shared, keptStoresDir, making), 0o700); err != nil {
		t.Fatal(err)
	}
	eng := roamingLeases{names: []string{live}}
	var mu sync.Mutex
	var logged strings.Builder
	log := slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &logged}, nil))
	unshared := &Manager{eng: eng, cfg: Config{CacheDir: shared}, log: log}
	if err := sweepRoamingStores(context.Background(), unshared); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(shared, keptStoresDir, ended)); err != nil {
		t.Fatalf("the sweep without --checkpoint-dir touched a store: %v", err)
	}
	var wg sync.WaitGroup
	for range 2 {
		m := &Manager{eng: eng, cfg: Config{CheckpointDir: shared}, log: log}
		wg.Go(func() {
			if err := sweepRoamingStores(context.Background(), m); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for name, want := range map[string]bool{live: true, ended: false, held: true, "proj": true, making: true} {
		if _, err := os.Stat(filepath.Join(shared, keptStoresDir, name)); errors.Is(err, os.ErrNotExist) == want {
			t.Errorf("store %s: present %v, want %v", name, !want, want)
		}
	}
	if n := strings.Count(logged.String(), "deleted the checkpoints of a roaming workspace that ended"); n != 1 {
		t.Errorf("the deletion was logged %d times, want once:\n%s", n, logged.String())
	}
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestRoamingHandoffWithCheckpointsNeedsASharedStore: a roaming
// workspace with checkpoints is refused a handoff, naming
// --checkpoint-dir, when the servers share no checkpoint directory (its
// checkpoints would stay behind); with one, the checkpoints are no reason
// to refuse it.
func TestRoamingHandoffWithCheckpointsNeedsASharedStore(t *testing.T) {
	for _, shared := range []bool{false, true} {
		m, fake, _ := newTestManager(t, func(c *Config) {
			if shared {
				c.CheckpointDir = t.TempDir()
			}
		})
		s, err := m.Session("roams")
		if err != nil {
			t.Fatal(err)
		}
		echo(t, s, "sh", "-c", "echo kept > a.txt")
		if _, err := s.checkpoints.Checkpoint(ctx, ""); err != nil {
			t.Fatal(err)
		}
		s.roaming = &roamingWorkspace{name: engine.NewRoamingName()}
		m.eng = roamingLeases{Engine: fake}
		_, err = handOverRoaming(ctx, s.handoffs, time.Minute)
		refused := errors.Is(err, errRoamingCheckpointsStay)
		if refused == shared || !shared && !strings.Contains(err.Error(), "--checkpoint-dir") {
			t.Errorf("shared store %v: the handoff's error %v; want it refused naming --checkpoint-dir only without one", shared, err)
		}
		s.roaming = nil
		m.eng = fake
	}
}
