package workspace

import (
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/changes"
	"github.com/wink-mcp/wink-mcp/internal/testtree"
)

// TestIgnoredDirectoriesComeLastAsOneEntry: across two mounted folders,
// workspace_changes lists every real change before the one entry of an
// ignored directory, a path inside that directory shows its entry, and
// workspace_diff puts every folder's hunks before any left-out line, which
// names the directory by its workspace path.
func TestIgnoredDirectoriesComeLastAsOneEntry(t *testing.T) {
	rootA, a := testtree.Host(t, map[string]string{".gitignore": "build/\n", "a.txt": "a\n"})
	rootB, b := testtree.Host(t, map[string]string{"b.txt": "b\n"})
	m, _, _ := newTestManager(t, func(c *Config) {
		c.Mounts = []Mount{{HostPath: a, Path: "a", Mode: MountCopy}, {HostPath: b, Path: "b", Mode: MountCopy}}
		c.AllowedRoots = []string{rootA, rootB}
	})
	s, _ := m.Session("s")
	for path, content := range map[string]string{"a/build/x/1.o": "1", "a/build/2.o": "22", "b/b.txt": "b, edited\n"} {
		if _, err := s.files.WriteFile(ctx, path, content); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.folders.Changes(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range list {
		got = append(got, c.Path+" "+string(c.Kind))
	}
	if strings.Join(got, ", ") != "b/b.txt file, a/build/ directory" || list[1].Files != 2 || list[1].Size != 3 {
		t.Errorf("changes %v (%+v)", got, list)
	}
	if inside, _ := s.folders.Changes(ctx, "a/build/x"); len(inside) != 1 || inside[0].Path != "a/build/" || inside[0].Kind != changes.KindDir {
		t.Errorf("changes under a/build/x: %+v", inside)
	}
	diff, err := s.folders.Diff(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	hunk, note := strings.Index(diff.Text, "+b, edited"), strings.Index(diff.Text, "# not in this patch: a/build/ (a new directory: 2 files, 3 bytes)")
	if hunk < 0 || note < hunk {
		t.Errorf("the diff does not put b's hunk before a's left-out line:\n%s", diff.Text)
	}
}

// TestChangesReadEveryFolderAfterAReadOnlyOne: a read-only mount, which
// cannot change, does not end the listing; the folders mounted after it
// are read too (they were skipped when it came first).
func TestChangesReadEveryFolderAfterAReadOnlyOne(t *testing.T) {
	root, folder := testtree.Host(t, map[string]string{"a.txt": "a\n"})
	m, _, _ := newTestManager(t, func(c *Config) {
		c.Mounts = []Mount{{HostPath: folder, Path: "ro", Mode: MountReadOnly}, {HostPath: folder, Path: "cp", Mode: MountCopy}}
		c.AllowedRoots = []string{root}
	})
	s, _ := m.Session("s")
	if _, err := s.files.WriteFile(ctx, "cp/a.txt", "a, edited\n"); err != nil {
		t.Fatal(err)
	}
	list, err := s.folders.Changes(ctx, "")
	if err != nil || len(list) != 1 || list[0].Path != "cp/a.txt" {
		t.Errorf("changes %+v, %v; want cp/a.txt", list, err)
	}
	if diff, err := s.folders.Diff(ctx, ""); err != nil || !strings.Contains(diff.Text, "+a, edited") {
		t.Errorf("diff %q, %v; want cp/a.txt's hunk", diff.Text, err)
	}
}
