package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/internal/testtree"
)

// TestUnexportedChangesOutliveEveryEnd: an export that cannot be written
// (its folder is a file) or is cut short (the shutdown timeout passed)
// deletes nothing: the session's files and its marker stay, the shutdown
// says where and how, `wink-mcp export` finds the session, and the next
// manager on the cache directory writes the patch where it was due,
// then deletes them.
func TestUnexportedChangesOutliveEveryEnd(t *testing.T) {
	for _, tc := range []struct {
		name string
		// spoil makes the end fail to export into exportDir; fix undoes it.
		spoil, fix func(t *testing.T, exportDir string)
		ctx        func() context.Context
	}{
		{name: "the export folder cannot be written",
			spoil: func(t *testing.T, dir string) { must(t, os.WriteFile(dir, nil, 0o600)) },
			fix:   func(t *testing.T, dir string) { must(t, os.Remove(dir)) },
			ctx:   context.Background},
		{name: "the shutdown timeout passed",
			spoil: func(*testing.T, string) {}, fix: func(*testing.T, string) {},
			ctx: func() context.Context { c, cancel := context.WithCancel(context.Background()); cancel(); return c }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, folder := testtree.Host(t, map[string]string{"a.txt": "one\n"})
			exportDir := filepath.Join(t.TempDir(), "patches")
			var cache string
			m, _, logs := newTestManager(t, func(c *Config) {
				c.Mounts, c.AllowedRoots, c.ExportDir = []Mount{{HostPath: folder, Mode: MountCopy}}, []string{root}, exportDir
				cache = c.CacheDir
			})
			s, _ := m.Session("s")
			if _, err := s.files.WriteFile(ctx, "proj/a.txt", "two\n"); err != nil {
				t.Fatal(err)
			}
			tc.spoil(t, exportDir)
			m.EndSession(tc.ctx(), "s")
			if _, err := os.Stat(filepath.Join(s.dir, mountsManifest)); err != nil {
				t.Fatalf("the session's files went before its changes were exported: %v\n%s", err, logs.String())
			}
			if !strings.Contains(logs.String(), "wink-mcp export --cache-dir "+cache+" --session "+s.who.hash()) {
				t.Errorf("the log does not say how to export the kept changes:\n%s", logs.String())
			}
			records, release, err := FindSessions(cache)
			if err != nil || len(records) != 1 || records[0].Hash != s.who.hash() {
				t.Errorf("wink-mcp export does not find the kept session: %v %+v", err, records)
			}
			release()
			if err := m.Close(context.Background()); !errors.Is(err, ErrChangesKept) || !strings.Contains(err.Error(), s.dir) {
				t.Errorf("Close = %v, want ErrChangesKept naming %s", err, s.dir)
			}

			tc.fix(t, exportDir)
			next, _, nextLogs := newTestManager(t, func(c *Config) { c.CacheDir = cache })
			if _, err := next.SweepOrphans(context.Background()); err != nil {
				t.Fatal(err)
			}
			patches, _ := filepath.Glob(filepath.Join(exportDir, "*-"+s.who.hash(), "proj.patch"))
			if len(patches) != 1 {
				t.Fatalf("the next manager exported %v:\n%s", patches, nextLogs.String())
			}
			if data, _ := os.ReadFile(patches[0]); !strings.Contains(string(data), "-one\n+two\n") {
				t.Errorf("the recovered patch:\n%s", data)
			}
			if _, err := os.Stat(filepath.Dir(filepath.Dir(s.dir))); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the dead instance's directory stays after its changes were exported: %v", err)
			}
		})
	}
}

// TestNothingToExportLeavesNothing: sessions with nothing a patch can hold
// (no change, or only files the folder ignores) leave nothing in the
// export folder, not even their directory.
func TestNothingToExportLeavesNothing(t *testing.T) {
	root, folder := testtree.Host(t, map[string]string{".gitignore": "build/\n", "a.txt": "one\n"})
	exportDir := t.TempDir()
	m, _, logs := newTestManager(t, func(c *Config) {
		c.Mounts, c.AllowedRoots, c.ExportDir = []Mount{{HostPath: folder, Mode: MountCopy}}, []string{root}, exportDir
	})
	unchanged, _ := m.Session("unchanged")
	echo(t, unchanged, "true")
	ignored, _ := m.Session("ignored")
	if _, err := ignored.files.WriteFile(ctx, "proj/build/out.o", "object\n"); err != nil {
		t.Fatal(err)
	}
	m.EndSession(ctx, "unchanged")
	m.EndSession(ctx, "ignored")
	if entries, _ := os.ReadDir(exportDir); len(entries) != 0 {
		t.Errorf("the export folder holds %v", entries)
	}
	if !strings.Contains(logs.String(), "nothing to apply") || !strings.Contains(logs.String(), "build/ (a new directory: 1 file") {
		t.Errorf("the log does not say what was left out:\n%s", logs.String())
	}
	for _, s := range []*Session{unchanged, ignored} {
		if _, err := os.Stat(s.dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the session directory %s stays: %v", s.dir, err)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
