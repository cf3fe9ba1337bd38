package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/egress"
)

// locked reports whether the session id of m has its egress locked.
func locked(t *testing.T, m *Manager, id string) bool {
	t.Helper()
	s, err := m.Session(id)
	if err != nil {
		t.Fatal(err)
	}
	return s.egressPolicy.EgressReport().Locked
}

// A lock in a kept workspace holds for the next session on it in another
// process (a restart), and for what a handoff, an attach or a fork makes
// of it; a workspace the lock never reached starts unlocked.
func TestAKeptWorkspacesLockOutlivesItsSession(t *testing.T) {
	cache := t.TempDir()
	a, _, _ := newTestManager(t, func(c *Config) { c.CacheDir = cache })
	a.Register("s1", SessionOptions{Workspace: "proj", Stdio: true})
	s1, _ := a.Session("s1")
	echo(t, s1, "true")
	forkBefore, err := s1.forks.Fork(ctx, 1, "", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s1.egressPolicy.LockEgress(); err != nil {
		t.Fatal(err)
	}
	forkAfter, err := s1.forks.Fork(ctx, 1, "", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	a.EndSession(ctx, "s1")

	// Another process (the server started again) opens it by its name.
	b, _, _ := newTestManager(t, func(c *Config) { c.CacheDir = cache })
	b.Register("s2", SessionOptions{Workspace: "proj", Stdio: true})
	if !locked(t, b, "s2") {
		t.Error("the kept workspace opened again after its session locked its egress is not locked")
	}
	// A fork made after the lock has it; one made before does not.
	b.Register("f1", SessionOptions{Stdio: true})
	f1, _ := b.Session("f1")
	if _, err := f1.handoffs.Attach(ctx, forkAfter[0].Handle); err != nil {
		t.Fatal(err)
	}
	if !locked(t, b, "f1") {
		t.Error("a fork made after the lock is not locked")
	}
	b.Register("f0", SessionOptions{Stdio: true})
	f0, _ := b.Session("f0")
	if _, err := f0.handoffs.Attach(ctx, forkBefore[0].Handle); err != nil {
		t.Fatal(err)
	}
	if locked(t, b, "f0") {
		t.Error("a fork made before the lock is locked")
	}

	// A stdio handoff: the giver's fresh workspace stays locked, and so
	// does the handed-over workspace in the process that attaches it.
	s2, _ := b.Session("s2")
	h, err := s2.handoffs.Handoff(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !locked(t, b, "s2") {
		t.Error("the giver's fresh workspace after a handoff is not locked")
	}
	b.EndSession(ctx, "s2")
	c, _, _ := newTestManager(t, func(c *Config) { c.CacheDir = cache })
	c.Register("taker", SessionOptions{Stdio: true})
	taker, _ := c.Session("taker")
	if _, err := taker.handoffs.Attach(ctx, h.Handle); err != nil {
		t.Fatal(err)
	}
	if !locked(t, c, "taker") {
		t.Error("the handed-over workspace attached in another process is not locked")
	}
}

// A session that locked its egress and then attaches a workspace that
// was never locked keeps its lock there, in memory and in the record; an
// in-process handoff keeps the lock on both sides.
func TestAttachingNeverGivesEgressBack(t *testing.T) {
	m, _, _ := newTestManager(t, nil)
	m.Register("giver", SessionOptions{Principal: "p"})
	m.Register("locker", SessionOptions{Principal: "p"})
	giver, _ := m.Session("giver")
	echo(t, giver, "true")
	h, err := giver.handoffs.Handoff(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	locker, _ := m.Session("locker")
	if _, err := locker.egressPolicy.LockEgress(); err != nil {
		t.Fatal(err)
	}
	if _, err := locker.handoffs.Attach(ctx, h.Handle); err != nil {
		t.Fatal(err)
	}
	if !locked(t, m, "locker") {
		t.Error("attaching an unlocked workspace unlocked the session")
	}
	// The in-process handoff of a locked session: both sides stay locked.
	taken, _ := m.Session("locker")
	h2, err := taken.handoffs.Handoff(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !locked(t, m, "locker") {
		t.Error("the giver's fresh workspace is not locked")
	}
	m.Register("other", SessionOptions{Principal: "p"})
	other, _ := m.Session("other")
	if _, err := other.handoffs.Attach(ctx, h2.Handle); err != nil {
		t.Fatal(err)
	}
	if !locked(t, m, "other") {
		t.Error("the locked workspace attached by another session is not locked")
	}
}

// A record that cannot be read locks the workspace's egress rather than
// giving anything back; records only grow.
func TestANarrowingRecordOnlyGrowsAndADamagedOneLocks(t *testing.T) {
	dir := t.TempDir()
	if err := addNarrowed(dir, egress.Narrowed{Dropped: []string{"b.example", "a.example"}}); err != nil {
		t.Fatal(err)
	}
	if err := addNarrowed(dir, egress.Narrowed{Dropped: []string{"c.example"}}); err != nil {
		t.Fatal(err)
	}
	got, err := readNarrowed(dir)
	if err != nil || got.Locked || !slices.Equal(got.Dropped, []string{"a.example", "b.example", "c.example"}) {
		t.Errorf("after two drops: %+v, %v", got, err)
	}
	if err := os.WriteFile(filepath.Join(dir, narrowingFile), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := readNarrowed(dir); err == nil || !got.Locked {
		t.Errorf("a damaged record: %+v, %v", got, err)
	}
	if err := addNarrowed(dir, egress.Narrowed{Dropped: []string{"d.example"}}); err != nil {
		t.Fatal(err)
	}
	if got, err := readNarrowed(dir); err != nil || !got.Locked || !slices.Equal(got.Dropped, []string{"d.example"}) {
		t.Errorf("a drop over a damaged record: %+v, %v", got, err)
	}
	cache := t.TempDir()
	root := keptRoot(cache, "proj")
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, narrowingFile), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	m, _, logs := newTestManager(t, func(c *Config) { c.CacheDir = cache })
	m.Register("s", SessionOptions{Workspace: "proj"})
	if !locked(t, m, "s") {
		t.Error("a workspace with a damaged record is not locked")
	}
	if !logs.contains("its egress is locked") {
		t.Errorf("no warning about the damaged record: %s", logs)
	}
}

// A roaming workspace whose replicas share no checkpoint directory
// refuses a drop or a lock, changing nothing: the next replica to serve
// its handle would give it back.
func TestARoamingWorkspaceWithoutASharedStoreRefusesToNarrow(t *testing.T) {
	m, _, _ := newTestManager(t, func(c *Config) { c.Egress = []string{"localhost:1"} })
	m.Register("s1", SessionOptions{Stdio: true})
	s, _ := m.Session("s1")
	s.roaming = &roamingWorkspace{name: "roam-x"} // no store lock: nothing shared
	if _, err := s.egressPolicy.LockEgress(); !errors.Is(err, errNarrowingNotKept) {
		t.Errorf("lock: %v, want %v", err, errNarrowingNotKept)
	}
	if _, err := s.egressPolicy.DropEgress("localhost:1"); err == nil {
		t.Error("drop: no error") // errNarrowingNotKept, or no egress before a container
	}
	if r := s.egressPolicy.EgressReport(); r.Locked || slices.ContainsFunc(r.Grants, func(g egress.Grant) bool { return g.Dropped }) {
		t.Errorf("a refused narrowing changed the egress: %+v", r)
	}
	s.roaming = nil
}
