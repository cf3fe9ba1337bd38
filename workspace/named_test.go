package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeptWorkspaceOutlivesItsProcess opens a kept workspace from one
// manager (one server process), refuses it to a second while the first
// owns it, and hands the second the same files and checkpoints once the
// first has let it go.
func TestKeptWorkspaceOutlivesItsProcess(t *testing.T) {
	cache := t.TempDir()
	a, _, _ := newTestManager(t, func(c *Config) { c.CacheDir = cache })
	b, _, _ := newTestManager(t, func(c *Config) { c.CacheDir = cache })
	a.Register("one", SessionOptions{Workspace: "proj"})
	s, err := a.Session("one")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.files.WriteFile(ctx, "notes.txt", "kept"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.checkpoints.Checkpoint(ctx, "first"); err != nil {
		t.Fatal(err)
	}
	b.Register("two", SessionOptions{Workspace: "proj"})
	_, err = b.Session("two")
	if !errors.Is(err, ErrWorkspaceInUse) || !strings.Contains(err.Error(), "wink-mcp process") || !strings.Contains(err.Error(), s.who.hash()) {
		t.Fatalf("second owner = %v, want in use naming the owner", err)
	}
	// Another session of the same process is refused too.
	a.Register("three", SessionOptions{Workspace: "proj"})
	if _, err := a.Session("three"); !errors.Is(err, ErrWorkspaceInUse) {
		t.Fatalf("second session of the same process = %v", err)
	}
	a.EndSession(ctx, "one")
	if _, err := os.Stat(filepath.Join(cache, workspacesDir, "proj", keptSessionDir)); err != nil {
		t.Fatalf("the kept workspace's files went with its session: %v", err)
	}
	s2, err := b.Session("two")
	if err != nil {
		t.Fatal(err)
	}
	if text, err := s2.files.ReadWhole(ctx, "notes.txt"); err != nil || text != "kept" {
		t.Errorf("resumed notes.txt = %q, %v", text, err)
	}
	list, err := s2.checkpoints.Checkpoints(ctx)
	if err != nil || len(list.Checkpoints) != 1 || list.Checkpoints[0].Message != "first" {
		t.Errorf("resumed checkpoints = %+v, %v", list, err)
	}
	// Another principal never opens it.
	b.EndSession(ctx, "two")
	b.Register("four", SessionOptions{Workspace: "proj", Principal: "other-token"})
	if _, err := b.Session("four"); err == nil || !strings.Contains(err.Error(), "belongs to another client") {
		t.Errorf("another principal = %v", err)
	}
	for _, bad := range []string{"", "../x", ".hidden", "a/b", strings.Repeat("x", 65), "sp ace"} {
		b.Register("bad", SessionOptions{Workspace: bad})
		if bad == "" {
			continue
		}
		if _, err := b.Session("bad"); err == nil {
			t.Errorf("workspace name %q was accepted", bad)
		}
	}
}
