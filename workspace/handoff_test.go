package workspace

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/internal/testwait"
)

func TestHandoffInProcessKeepsTheContainerAndJobs(t *testing.T) {
	m, eng, _ := newTestManager(t, nil)
	m.Register("a", SessionOptions{Principal: "p1"})
	m.Register("b", SessionOptions{Principal: "p1"})
	m.Register("c", SessionOptions{Principal: "p2"})
	a, _ := m.Session("a")
	if _, err := a.files.WriteFile(ctx, "plan.md", "the plan"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.jobs.StartJob(ctx, JobRequest{Argv: []string{"sleep", "60"}, Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	h, err := a.handoffs.Handoff(ctx, time.Minute)
	if err != nil || len(h.Handle) != 64 || !h.KeptContainer {
		t.Fatalf("handoff = %+v, %v", h, err)
	}
	// The giver goes on with a fresh, empty workspace.
	a2, _ := m.Session("a")
	if list, err := a2.files.List(ctx, ""); err != nil || len(list.Entries) != 0 {
		t.Errorf("the giver's new workspace = %+v, %v", list, err)
	}
	c, _ := m.Session("c")
	if _, err := c.handoffs.Attach(ctx, h.Handle); !errors.Is(err, ErrBadHandle) {
		t.Errorf("another principal's attach = %v", err)
	}
	b, _ := m.Session("b")
	att, err := b.handoffs.Attach(ctx, h.Handle)
	if err != nil || !att.KeptContainer {
		t.Fatalf("attach = %+v, %v", att, err)
	}
	b2, _ := m.Session("b")
	if text, err := b2.files.ReadWhole(ctx, "plan.md"); err != nil || text != "the plan" {
		t.Errorf("attached plan.md = %q, %v", text, err)
	}
	jobs, err := b2.jobs.Jobs(ctx)
	if err != nil || jobs.Running != 1 {
		t.Errorf("attached jobs = %+v, %v", jobs, err)
	}
	if _, err := c.handoffs.Attach(ctx, h.Handle); !errors.Is(err, ErrBadHandle) {
		t.Errorf("a used handle = %v", err)
	}
	for _, bad := range []string{"", "x", strings.Repeat("0", 64), strings.Repeat("z", 500)} {
		if _, err := c.handoffs.Attach(ctx, bad); !errors.Is(err, ErrBadHandle) {
			t.Errorf("handle %q = %v", bad, err)
		}
	}
	// An unattached handoff expires, and its container goes.
	before := eng.count()
	if _, err := b2.handoffs.Handoff(ctx, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the expired workspace's container to go", func() bool { return eng.count() < before })
}

func TestHandoffOverStdioGoesToDiskForAnotherProcess(t *testing.T) {
	cache := t.TempDir()
	a, _, _ := newTestManager(t, func(c *Config) { c.CacheDir = cache })
	b, _, _ := newTestManager(t, func(c *Config) { c.CacheDir = cache })
	a.Register("stdio", SessionOptions{Stdio: true})
	b.Register("stdio", SessionOptions{Stdio: true})
	s, _ := a.Session("stdio")
	echo(t, s, "sh", "-c", "mkdir -p src && echo half-done > src/work.txt")
	if _, err := s.checkpoints.Checkpoint(ctx, "planned"); err != nil {
		t.Fatal(err)
	}
	h, err := s.handoffs.Handoff(ctx, time.Minute)
	if err != nil || h.KeptContainer || !strings.HasPrefix(h.Workspace, "handoff-") {
		t.Fatalf("handoff = %+v, %v", h, err)
	}
	// Reserved for the handle: its name alone does not open it.
	b.Register("named", SessionOptions{Workspace: h.Workspace})
	if _, err := b.Session("named"); err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Errorf("opening the handed-over workspace by name = %v", err)
	}
	r, _ := b.Session("stdio")
	// A receiver that already did work is refused, and keeps its work.
	if _, err := r.files.WriteFile(ctx, "mine.txt", "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.handoffs.Attach(ctx, h.Handle); err == nil || !strings.Contains(err.Error(), "holds work") {
		t.Errorf("attach over work = %v", err)
	}
	b.EndSession(ctx, "stdio")
	b.Register("stdio2", SessionOptions{Stdio: true})
	r, _ = b.Session("stdio2")
	att, err := r.handoffs.Attach(ctx, h.Handle)
	if err != nil || att.Workspace != h.Workspace {
		t.Fatalf("attach = %+v, %v", att, err)
	}
	r2, _ := b.Session("stdio2")
	if text, err := r2.files.ReadWhole(ctx, "src/work.txt"); err != nil || text != "half-done\n" {
		t.Errorf("attached work.txt = %q, %v", text, err)
	}
	if list, err := r2.checkpoints.Checkpoints(ctx); err != nil || len(list.Checkpoints) != 1 {
		t.Errorf("attached checkpoints = %+v, %v", list, err)
	}
	b.Register("stdio3", SessionOptions{Stdio: true})
	r3, _ := b.Session("stdio3")
	if _, err := r3.handoffs.Attach(ctx, h.Handle); !errors.Is(err, ErrBadHandle) {
		t.Errorf("a used handle = %v", err)
	}
}

// Over stdio, a workspace whose files are on the engine's host is not
// handed to another process; the refusal says where the files are, in the
// engine's terms, and what serves a handoff instead.
func TestStdioHandoffOfFilesOnTheEngineHostIsRefused(t *testing.T) {
	for _, c := range []struct {
		name      string
		service   engine.Service
		want, not string
	}{
		{"podman host", engine.Service{Remote: true}, "--files-on-podman-host", "kubernetes"},
		{"kubernetes", engine.Service{Remote: true, BoundsDisk: true, Pods: true}, "in its Pod on the cluster (--engine kubernetes)", "podman"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, eng, _ := newTestManager(t, func(c *Config) { c.FilesOnEngineHost = true })
			eng.mu.Lock()
			eng.service = c.service
			eng.mu.Unlock()
			m.Register("stdio", SessionOptions{Stdio: true})
			s, _ := m.Session("stdio")
			_, err := s.handoffs.Handoff(ctx, time.Minute)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--transport http") || strings.Contains(strings.ToLower(err.Error()), c.not) {
				t.Errorf("a stdio handoff: %v; want it refused naming %s and --transport http, not %s", err, c.want, c.not)
			}
		})
	}
}
