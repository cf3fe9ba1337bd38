package workspace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"

	"github.com/wink-mcp/wink-mcp/engine"
)

// livingEngine is the fake engine with instances' liveness held in its
// service, as the Kubernetes engine's Leases hold it.
type livingEngine struct {
	*fakeEngine

	mu        sync.Mutex
	alive     map[string]bool // by instance ID; missing is dead
	holdErr   error           // what the next Held returns
	released  []string
	forgotten int
	known     []string // what the last ForgetDeadInstances was told
}

type livingHold struct {
	e  *livingEngine
	id string
}

func (h livingHold) Held() error {
	h.e.mu.Lock()
	defer h.e.mu.Unlock()
	return h.e.holdErr
}

func (h livingHold) Release(context.Context) error {
	h.e.mu.Lock()
	defer h.e.mu.Unlock()
	delete(h.e.alive, h.id)
	h.e.released = append(h.e.released, h.id)
	return nil
}

func (e *livingEngine) HoldInstance(_ context.Context, id string) (engine.InstanceHold, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.alive[id] = true
	return livingHold{e: e, id: id}, nil
}

func (e *livingEngine) InstanceAlive(_ context.Context, id string) (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if id == "unanswerable0000" {
		return false, errors.New("the API server did not answer")
	}
	return e.alive[id], nil
}

func (e *livingEngine) ForgetDeadInstances(_ context.Context, known []string) ([]string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.forgotten++
	e.known = known
	return nil, nil
}

// newLivingManager is newTestManager with a livingEngine.
func newLivingManager(t *testing.T) (*Manager, *livingEngine) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Image = "test-image"
	cfg.CacheDir = t.TempDir()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	eng := &livingEngine{fakeEngine: newFakeEngine(t), alive: map[string]bool{}}
	m, err := newManager(cfg, slog.New(slog.NewJSONHandler(&logBuffer{}, nil)), eng, "/fake/agent")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	return m, eng
}

// TestSweepByLiveness sweeps with an engine that holds instances'
// liveness: the containers of a dead instance go whatever host made them
// and whatever their lock file says; a live one's, this instance's, and
// those whose owner cannot be told stay; the dead instances' liveness is
// forgotten after.
func TestSweepByLiveness(t *testing.T) {
	m, eng := newLivingManager(t)
	ctx := context.Background()
	if err := m.liveness.ensure(ctx, m.inst.id); err != nil {
		t.Fatal(err)
	}
	eng.alive["1111111111111111"] = true
	for name, id := range map[string]string{"wink-dead": "2222222222222222", "wink-live": "1111111111111111", "wink-mine": m.inst.id,
		"wink-unknown": "unanswerable0000", "wink-malformed": "not-an-instance"} {
		labels := ownerLabels(m.inst, "0123456789abcdef")
		labels[LabelInstance], labels[LabelHost], labels[LabelLock] = id, "another-replica", "/gone/lock"
		eng.containers[name] = &fakeContainer{}
		eng.listed = append(eng.listed, engine.Listed{Name: name, Labels: labels})
	}
	// A server restarted on this host: its lock file is here and free,
	// while its liveness has not expired yet.
	restarted, err := newInstance(m.cfg.CacheDir, false)
	if err != nil {
		t.Fatal(err)
	}
	restarted.lock.Close()
	eng.alive[restarted.id] = true
	eng.containers["wink-restarted"] = &fakeContainer{}
	eng.listed = append(eng.listed, engine.Listed{Name: "wink-restarted", Labels: ownerLabels(restarted, "0123456789abcdef")})
	removed, err := m.SweepOrphans(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if removed != 2 || eng.containers["wink-dead"] != nil || eng.containers["wink-restarted"] != nil || len(eng.containers) != 4 {
		t.Errorf("removed %d, remaining %v; want wink-dead and wink-restarted removed", removed, eng.containers)
	}
	if eng.forgotten != 1 || len(eng.known) != 1 || eng.known[0] != restarted.id {
		t.Errorf("ForgetDeadInstances called %d times, last told %v; want once a sweep, told of the instance dead by its lock file", eng.forgotten, eng.known)
	}
}

// TestLivenessGatesWorkspaces checks that a server whose liveness is not
// renewed makes no workspace, saying why, and that Close releases it.
func TestLivenessGatesWorkspaces(t *testing.T) {
	m, eng := newLivingManager(t)
	ctx := context.Background()
	eng.holdErr = fmt.Errorf("%w: last renewed 20s ago", engine.ErrNotHeld)
	s, err := m.Session("s1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start(ctx); !errors.Is(err, engine.ErrNotHeld) {
		t.Fatalf("a call while the liveness is not held = %v; want ErrNotHeld", err)
	}
	if eng.count() != 0 {
		t.Errorf("%d containers made while the liveness is not held", eng.count())
	}
	eng.mu.Lock()
	eng.holdErr = nil
	eng.mu.Unlock()
	if _, err := s.Start(ctx); err != nil {
		t.Fatalf("a call once the liveness is held again: %v", err)
	}
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if len(eng.released) != 1 || eng.released[0] != m.inst.id {
		t.Errorf("released %v; want this instance's liveness released at Close", eng.released)
	}
	if err := m.liveness.ensure(ctx, m.inst.id); !errors.Is(err, ErrSessionEnded) || eng.alive[m.inst.id] {
		t.Errorf("taking the liveness after Close = %v; want ErrSessionEnded and no hold taken", err)
	}
}

func TestOfDeadInstance(t *testing.T) {
	self := &instance{id: "aaaaaaaaaaaaaaaa"}
	alive := func(id string) (bool, error) {
		switch id {
		case "bbbbbbbbbbbbbbbb":
			return true, nil
		case "eeeeeeeeeeeeeeee":
			return false, errors.New("cannot tell")
		}
		return false, nil
	}
	for _, tt := range []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{"dead", map[string]string{LabelManaged: "true", LabelInstance: "cccccccccccccccc"}, true},
		{"live", map[string]string{LabelManaged: "true", LabelInstance: "bbbbbbbbbbbbbbbb"}, false},
		{"self", map[string]string{LabelManaged: "true", LabelInstance: self.id}, false},
		{"unknown", map[string]string{LabelManaged: "true", LabelInstance: "eeeeeeeeeeeeeeee"}, false},
		{"not ours", map[string]string{LabelInstance: "cccccccccccccccc"}, false},
		{"no instance", map[string]string{LabelManaged: "true"}, false},
		{"malformed instance", map[string]string{LabelManaged: "true", LabelInstance: "../cccccccccccc"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := ofDeadInstance(tt.labels, self, alive); got != tt.want {
				t.Errorf("ofDeadInstance = %v; want %v", got, tt.want)
			}
		})
	}
}
