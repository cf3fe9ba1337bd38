package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/testtree"
	"github.com/wink-mcp/wink-mcp/internal/testwait"
)

// handedOverRun is a stdio session's workspace, with a change to a
// mounted folder, handed to another process of the same cache directory.
type handedOverRun struct {
	cache, exportDir string
	configure        func(*Config) // the mounts; a process that attaches needs the same
	giver            *Manager
	giverLogs        *logBuffer
	h                Handoff
}

// handOverChange makes the giver (with --export-on-exit into exportDir)
// change proj/a.txt and hand its workspace over for ttl.
func handOverChange(t *testing.T, exportDir string, ttl time.Duration) *handedOverRun {
	t.Helper()
	root, folder := testtree.Host(t, map[string]string{"a.txt": "one\n"})
	r := &handedOverRun{cache: t.TempDir(), exportDir: exportDir}
	r.configure = func(c *Config) {
		c.CacheDir, c.Mounts, c.AllowedRoots = r.cache, []Mount{{HostPath: folder, Mode: MountCopy}}, []string{root}
	}
	r.giver, _, r.giverLogs = newTestManager(t, func(c *Config) { r.configure(c); c.ExportDir = exportDir })
	r.giver.Register("g", SessionOptions{Stdio: true})
	s, _ := r.giver.Session("g")
	if _, err := s.files.WriteFile(ctx, "proj/a.txt", "two\n"); err != nil {
		t.Fatal(err)
	}
	var err error
	if r.h, err = s.handoffs.Handoff(ctx, ttl); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pendingPath(r.giver.inst.dir, s.dir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the giver's marker stays beside the moved files: %v", err)
	}
	return r
}

// attach opens the workspace in another manager, without ExportDir.
func (r *handedOverRun) attach(t *testing.T) (*Manager, *logBuffer) {
	t.Helper()
	m, _, logs := newTestManager(t, r.configure)
	m.Register("b", SessionOptions{Stdio: true})
	b, _ := m.Session("b")
	if _, err := b.handoffs.Attach(ctx, r.h.Handle); err != nil {
		t.Fatal(err)
	}
	taken, _ := m.Session("b")
	if _, err := taken.files.WriteFile(ctx, "proj/b.txt", "mine\n"); err != nil {
		t.Fatal(err)
	}
	return m, logs
}

// exported returns the patch written for the giver's session.
func (r *handedOverRun) exported(t *testing.T) string {
	t.Helper()
	patches, _ := filepath.Glob(filepath.Join(r.exportDir, "*", "proj.patch"))
	if len(patches) != 1 {
		t.Fatalf("patches written: %v", patches)
	}
	data, _ := os.ReadFile(patches[0])
	return string(data)
}

// TestHandedOverWorkspaceExportsBeforeItGoes: every end of a handed-over
// workspace (its expiry in the giver, the next start's sweep, the end of
// the session that attached it) writes its changes where the giver's
// --export-on-exit said, whatever the deleting process's flags, and only
// then deletes it.
func TestHandedOverWorkspaceExportsBeforeItGoes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ttl      time.Duration
		attached bool
		end      func(t *testing.T, r *handedOverRun)
	}{
		{name: "expiry in the giver", ttl: 50 * time.Millisecond, end: func(t *testing.T, r *handedOverRun) {
			testwait.For(t, "the expired workspace to go", func() bool { return !fileThere(keptRoot(r.cache, r.h.Workspace)) })
		}},
		{name: "the next start's sweep", ttl: 50 * time.Millisecond, end: func(t *testing.T, r *handedOverRun) {
			// Its timer never fires; past the expiry, Close says the
			// workspace is kept for the next start.
			if err := r.giver.Close(ctx); err != nil && !errors.Is(err, ErrChangesKept) {
				t.Fatal(err)
			}
			time.Sleep(time.Until(r.h.Expires))
			next, _, _ := newTestManager(t, func(c *Config) { c.CacheDir = r.cache })
			if _, err := next.SweepOrphans(ctx); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "the attaching session ends", ttl: time.Minute, attached: true, end: func(t *testing.T, r *handedOverRun) {
			m, _ := r.attach(t)
			m.EndSession(ctx, "b")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := handOverChange(t, t.TempDir(), tc.ttl)
			tc.end(t, r)
			patch := r.exported(t)
			if !strings.Contains(patch, "-one\n+two\n") || tc.attached != strings.Contains(patch, "+mine\n") {
				t.Errorf("the patch:\n%s", patch)
			}
			if fileThere(keptRoot(r.cache, r.h.Workspace)) {
				t.Errorf("the workspace outlived its export")
			}
		})
	}
}

// TestHandedOverWorkspaceKeptWhenItsExportFails: when the folder cannot
// be written, the session that attached the workspace ends without
// deleting it; `wink-mcp export` finds it by its name, Close says where it
// is kept, the giver still counts its disk, and the next start exports it
// once the folder can be written.
func TestHandedOverWorkspaceKeptWhenItsExportFails(t *testing.T) {
	blocked := filepath.Join(t.TempDir(), "patches")
	must(t, os.WriteFile(blocked, nil, 0o600))
	r := handOverChange(t, blocked, time.Minute)
	m, logs := r.attach(t)
	m.EndSession(ctx, "b")
	root := keptRoot(r.cache, r.h.Workspace)
	if !fileThere(filepath.Join(root, recordFile)) {
		t.Fatalf("the workspace went though its export failed:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "wink-mcp export --cache-dir "+r.cache+" --session "+r.h.Workspace) {
		t.Errorf("the log does not say how to export it:\n%s", logs.String())
	}
	records, release, err := FindSessions(r.cache)
	found := false
	for _, rec := range records {
		found = found || (rec.Hash == r.h.Workspace && len(rec.Mounts) == 1)
	}
	release()
	if err != nil || !found {
		t.Errorf("FindSessions does not list the kept workspace: %v %+v", err, records)
	}
	if pruned, _ := PruneKept(r.cache, time.Now().Add(time.Hour), true); len(pruned) != 0 {
		t.Errorf("prune would delete it: %v", pruned)
	}
	if err := m.Close(context.Background()); !errors.Is(err, ErrChangesKept) || !strings.Contains(err.Error(), r.h.Workspace) {
		t.Errorf("Close = %v, want ErrChangesKept naming the workspace", err)
	}
	giver, _ := r.giver.Session("g")
	if giver.handoffs.heldDisk() == 0 {
		t.Errorf("the giver does not count the workspace kept for its export")
	}

	must(t, os.Remove(blocked))
	next, _, _ := newTestManager(t, func(c *Config) { c.CacheDir = r.cache })
	if _, err := next.SweepOrphans(ctx); err != nil {
		t.Fatal(err)
	}
	if patch := r.exported(t); !strings.Contains(patch, "+two\n") || !strings.Contains(patch, "+mine\n") {
		t.Errorf("the patch:\n%s", patch)
	}
	if fileThere(root) {
		t.Errorf("the workspace outlived its export")
	}
}

func fileThere(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
