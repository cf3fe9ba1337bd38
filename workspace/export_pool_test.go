package workspace

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/wink-mcp/wink-mcp/internal/testtree"
	"github.com/wink-mcp/wink-mcp/internal/testwait"
)

// A pooled container no session took is no session: `wink-mcp export`
// does not find it and it waits for no export. The session that takes it
// is found under its own hash, and its pending export is marked with it.
func TestPooledContainerIsASessionOnlyOnceTaken(t *testing.T) {
	root, folder := testtree.Host(t, map[string]string{"a.txt": "one\n"})
	exportDir := filepath.Join(t.TempDir(), "patches")
	var cache string
	m, _, logs := newTestManager(t, func(c *Config) {
		c.Mounts, c.AllowedRoots, c.ExportDir, c.Warm = []Mount{{HostPath: folder, Mode: MountCopy}}, []string{root}, exportDir, 2
		cache = c.CacheDir
	})
	testwait.For(t, "a full pool", func() bool { return len(readyEntries(m.pool)) == 2 })
	found := func() []SessionRecord {
		t.Helper()
		records, release, err := FindSessions(cache)
		if err != nil {
			t.Fatal(err)
		}
		release()
		return records
	}
	markers := func() []string {
		list, _ := filepath.Glob(filepath.Join(m.inst.dir, pendingDir, "*.json"))
		return list
	}
	if r := found(); len(r) != 0 {
		t.Fatalf("pooled containers are listed as sessions: %+v", r)
	}
	if list := markers(); len(list) != 0 {
		t.Fatalf("pooled containers wait for an export: %v", list)
	}

	s, _ := m.Session("s")
	if s.key == s.who.hash() {
		t.Fatal("the session did not get a pooled container")
	}
	if _, err := s.files.WriteFile(ctx, "proj/a.txt", "two\n"); err != nil {
		t.Fatal(err)
	}
	r := found()
	if len(r) != 1 || r[0].Hash != s.who.hash() || filepath.Base(r[0].Dir) != s.key {
		t.Fatalf("found %+v, want the session %s in the directory %s", r, s.who.hash(), s.key)
	}
	list := markers()
	if len(list) != 1 {
		t.Fatalf("export markers %v, want the session's", list)
	}
	if p, err := readPending(list[0]); err != nil || p.Session != s.who.hash() {
		t.Errorf("the marker names %+v (%v), want the session %s", p, err, s.who.hash())
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	patches, _ := filepath.Glob(filepath.Join(exportDir, "*", "proj.patch"))
	entries, _ := os.ReadDir(exportDir)
	if len(patches) != 1 || len(entries) != 1 || filepath.Base(filepath.Dir(patches[0]))[17:] != s.who.hash() {
		t.Errorf("exported %v (%d folders), want one patch of %s:\n%s", patches, len(entries), s.who.hash(), logs.String())
	}
}
