package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/wink-mcp/wink-mcp/engine"
)

// keptFakeEngine is a fakeEngine that keeps kept workspaces itself, as
// the Kubernetes engine does: one holder per name, in memory.
type keptFakeEngine struct {
	*fakeEngine
	mu       sync.Mutex
	holders  map[string]string
	asks     []engine.KeptAsk
	released int
}

func (k *keptFakeEngine) HoldKept(_ context.Context, ask engine.KeptAsk) (*engine.Held, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.asks = append(k.asks, ask)
	if h := k.holders[ask.Name]; h != "" {
		return nil, fmt.Errorf("%w: workspace %q is held by %s", engine.ErrKeptHeld, ask.Name, h)
	}
	k.holders[ask.Name] = ask.Holder
	var once sync.Once
	return &engine.Held{Volume: "kept-" + ask.Name, StoreKey: "uid-" + ask.Name, Release: func(context.Context) {
		once.Do(func() {
			k.mu.Lock()
			defer k.mu.Unlock()
			delete(k.holders, ask.Name)
			k.released++
		})
	}}, nil
}

func (k *keptFakeEngine) ListKept(context.Context) ([]engine.KeptRecord, error) { return nil, nil }
func (k *keptFakeEngine) RemoveKept(context.Context, string) error              { return nil }

// A kept workspace of an engine that keeps them (the Kubernetes engine's
// PersistentVolumeClaim and Lease) is held from the engine, mounted as
// its volume, refused to a second session while held, kept when its
// session ends, and found again by the next.
func TestKeptWorkspaceHeldByTheEngine(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Image, cfg.CacheDir, cfg.FilesOnEngineHost = "test-image", t.TempDir(), true
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	eng := &keptFakeEngine{fakeEngine: newFakeEngine(t), holders: map[string]string{}}
	// As the Kubernetes engine's emptyDir sessions: only the kept volume outlives its container.
	eng.service = engine.Service{Remote: true, Pods: true, FilesGoWithContainer: true}
	m, err := newManager(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), eng, "/fake/agent")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })

	m.Register("a", SessionOptions{Workspace: "proj", Principal: "p1"})
	a, err := m.Session("a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.files.WriteFile(ctx, "a.txt", "kept"); err != nil {
		t.Fatal(err)
	}
	eng.mu.Lock()
	ask := eng.asks[0]
	eng.mu.Unlock()
	if ask.Principal != "p1" || ask.DiskBytes != cfg.DiskBytes || !strings.Contains(ask.Holder, m.inst.id) || ask.Gone == nil {
		t.Errorf("ask %+v; want the principal, the disk limit, this instance as holder, a Gone", ask)
	}
	eng.fakeEngine.mu.Lock()
	spec := eng.containers[a.Info().Name].spec
	eng.fakeEngine.mu.Unlock()
	if spec.WorkspaceVolume != "kept-proj" || spec.KeptWorkspace != "proj" {
		t.Errorf("spec: volume %q, kept %q; want kept-proj, proj", spec.WorkspaceVolume, spec.KeptWorkspace)
	}
	if a.Info().Kept != "proj" {
		t.Errorf("Info().Kept = %q", a.Info().Kept)
	}

	m.Register("b", SessionOptions{Workspace: "proj", Principal: "p1"})
	if _, err := m.Session("b"); err == nil || !strings.Contains(err.Error(), `workspace "proj" is held by wink-mcp instance`) {
		t.Errorf("a second session: %v", err)
	}
	if _, err := a.handoffs.Handoff(ctx, 60e9); err == nil || !strings.Contains(err.Error(), "opens it by its name") {
		t.Errorf("handing it over: %v", err)
	}
	m.EndSession(ctx, "a")
	eng.mu.Lock()
	released := eng.released
	eng.mu.Unlock()
	if released != 1 || eng.volume("kept-proj") == "" {
		t.Fatalf("after the session: released %d times, volume %q; want once, kept", released, eng.volume("kept-proj"))
	}
	if _, err := os.Stat(a.dir); !os.IsNotExist(err) {
		t.Errorf("the session's directory on this machine is left: %v", err)
	}
	if want := filepath.Join(cfg.CacheDir, "checkpoints", "kept", "uid-proj"); a.storeDir != want {
		t.Errorf("the checkpoint store is %s; want %s", a.storeDir, want)
	} else if _, err := os.Stat(filepath.Join(want, "checkpoints")); err != nil {
		t.Errorf("the kept workspace's checkpoint store went with its session: %v", err)
	}
	m.Register("c", SessionOptions{Workspace: "proj", Principal: "p1"})
	c, err := m.Session("c")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.files.ReadFile(ctx, "a.txt", 0, 100); err != nil || !strings.Contains(got.Content, "kept") {
		t.Errorf("the next session reads a.txt: %q, %v", got.Content, err)
	}
	if c.storeDir != a.storeDir {
		t.Errorf("the next session's store is %s; want %s", c.storeDir, a.storeDir)
	}
	// c holds the store's lock: another process (here: another open of the
	// lock file) is refused, and the store cannot be removed under it.
	if f, err := lockKeptStore(c.storeDir, "proj", 0); !errors.Is(err, ErrStoreLocked) || !strings.Contains(fmt.Sprint(err), c.storeDir) {
		if f != nil {
			f.Close()
		}
		t.Errorf("locking a held store: %v; want ErrStoreLocked naming the store", err)
	}
	if err := RemoveKeptStore(filepath.Join(cfg.CacheDir, "checkpoints"), "uid-proj", "proj"); !errors.Is(err, ErrStoreLocked) {
		t.Errorf("removing a held store: %v; want ErrStoreLocked", err)
	}
	m.EndSession(ctx, "c")
	if err := RemoveKeptStore(filepath.Join(cfg.CacheDir, "checkpoints"), "uid-proj", "proj"); err != nil {
		t.Errorf("removing a free store: %v", err)
	}
	if _, err := os.Stat(c.storeDir); !os.IsNotExist(err) {
		t.Errorf("after RemoveKeptStore the store is left: %v", err)
	}
}

// A store key that is not one path element names no store: a key from an
// engine cannot reach outside the checkpoint directory.
func TestKeptStoreDirRefusesPaths(t *testing.T) {
	for _, key := range []string{"", ".", "..", "../x", "a/b", `a\b`, "/abs"} {
		if dir, err := KeptStoreDir("/c", key); err == nil {
			t.Errorf("KeptStoreDir(%q) = %s; want an error", key, dir)
		}
	}
	if dir, err := KeptStoreDir("/c", "0d2c1f3e-uid"); err != nil || dir != "/c/kept/0d2c1f3e-uid" {
		t.Errorf("KeptStoreDir(uid) = %s, %v", dir, err)
	}
	if list, n, err := KeptCheckpoints(t.TempDir(), "none"); err != nil || len(list) != 0 || n != 0 {
		t.Errorf("KeptCheckpoints of a missing store: %v, %d, %v; want none", list, n, err)
	}
}

// holderGone knows a holder of this host whose process has exited, and
// nothing of other hosts or of a process that runs.
func TestHolderGone(t *testing.T) {
	m, _, _ := newTestManager(t, nil)
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	holder := func(pid int, host string) string {
		return fmt.Sprintf("wink-mcp instance x (pid %d on %s), session y", pid, host)
	}
	for _, tc := range []struct {
		name   string
		holder string
		want   bool
	}{
		{"exited here", holder(exited.Process.Pid, m.inst.host), true},
		{"running here", holder(os.Getppid(), m.inst.host), false},
		{"this process", holder(os.Getpid(), m.inst.host), false},
		{"another host", holder(exited.Process.Pid, "elsewhere"), false},
		{"not ours", "some controller", false},
	} {
		if got := m.inst.holderGone(tc.holder); got != tc.want {
			t.Errorf("%s: holderGone = %v; want %v", tc.name, got, tc.want)
		}
	}
}
