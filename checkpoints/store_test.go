package checkpoints

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// put stores a tree of one directory holding files named by their content.
func put(t *testing.T, s *Store, files ...string) string {
	t.Helper()
	b := s.Build()
	defer b.Done()
	var entries []Entry
	for _, f := range files {
		sum, err := b.PutBlob([]byte(f))
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, Entry{Name: f, Kind: KindFile, Mode: 0o644, Size: int64(len(f)), Hash: sum})
	}
	sub, err := b.PutTree(nil)
	if err != nil {
		t.Fatal(err)
	}
	entries = append(entries, Entry{Name: "empty", Kind: KindDir, Mode: 0o755, Hash: sub},
		Entry{Name: "link\xffbad", Kind: KindSymlink, Mode: 0o777, Target: "../\x00\xfe"})
	root, err := b.PutTree(entries)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func TestCommitListDeleteAndCollect(t *testing.T) {
	s, err := Open(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	r1 := put(t, s, "a", "shared")
	c1, err := s.Commit(Checkpoint{Root: r1, Message: "one"})
	if err != nil || c1.ID != "c1" {
		t.Fatalf("commit = %+v, %v", c1, err)
	}
	before := s.Bytes()
	r2 := put(t, s, "b", "shared")
	c2, _ := s.Commit(Checkpoint{Root: r2})
	if added := s.Bytes() - before; added > int64(len("b"))+600 {
		t.Errorf("the second checkpoint added %d bytes for one new byte", added)
	}
	list, err := s.List()
	if err != nil || len(list) != 2 || list[0].ID != "c1" || list[1].ID != c2.ID {
		t.Fatalf("list = %+v, %v", list, err)
	}
	// Names and targets that are not UTF-8 survive the store.
	link, err := fs.ReadLink(s.FS(r2), "link\xffbad")
	if err != nil || link != "../\x00\xfe" {
		t.Errorf("readlink = %q, %v", link, err)
	}
	freed, err := s.Delete("c1")
	if err != nil || freed == 0 {
		t.Fatalf("delete = %d, %v", freed, err)
	}
	if !s.Has(c2.Root) || s.Has(r1) {
		t.Error("collection kept the deleted checkpoint's tree or lost the live one's")
	}
	data, err := fs.ReadFile(s.FS(r2), "shared")
	if err != nil || string(data) != "shared" {
		t.Errorf("shared content after collection = %q, %v", data, err)
	}
	// IDs are never reused, even after the counter is lost.
	os.Remove(filepath.Join(s.Dir(), counterFile))
	c3, _ := s.Commit(Checkpoint{Root: r2})
	if c3.ID != "c3" {
		t.Errorf("next id = %s, want c3", c3.ID)
	}
	if _, err := s.Get("c1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("get deleted = %v", err)
	}
}

// TestAKilledWriterLeavesAReadableStore stands for a process killed while
// it wrote: temporary files and objects of a checkpoint never recorded.
func TestAKilledWriterLeavesAReadableStore(t *testing.T) {
	dir := t.TempDir()
	s, _ := Open(dir, 0)
	root := put(t, s, "kept")
	if _, err := s.Commit(Checkpoint{Root: root}); err != nil {
		t.Fatal(err)
	}
	orphan := put(t, s, "never recorded")
	os.WriteFile(filepath.Join(dir, tmpDir, "blob-123"), []byte("half"), 0o600)
	os.WriteFile(filepath.Join(dir, tmpDir, "write-9"), []byte("{"), 0o600)

	s2, err := Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, tmpDir)); len(entries) != 0 {
		t.Errorf("temporary files left: %d", len(entries))
	}
	list, err := s2.List()
	if err != nil || len(list) != 1 {
		t.Fatalf("list = %+v, %v", list, err)
	}
	if _, err := s2.Collect(); err != nil {
		t.Fatal(err)
	}
	if s2.Has(orphan) || !s2.Has(root) {
		t.Error("collection did not take the unrecorded checkpoint's objects, or took the recorded one's")
	}
}

func TestDamageIsDetected(t *testing.T) {
	s, _ := Open(t.TempDir(), 0)
	b := s.Build()
	sum, _ := b.PutBlob([]byte("content"))
	b.Done()
	os.WriteFile(s.objectPath(sum), []byte("changed"), 0o600)
	r, err := s.OpenBlob(sum)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(r); !errors.Is(err, ErrCorrupt) {
		t.Errorf("reading a damaged object = %v, want ErrCorrupt", err)
	}
	for _, bad := range []string{"", "../x", strings.Repeat("Z", 64)} {
		if _, err := s.OpenBlob(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("OpenBlob(%q) = %v", bad, err)
		}
	}
	// A tree whose entries no scan makes is refused.
	b = s.Build()
	hostile, _ := b.PutBlob([]byte(`[{"name":"../escape","kind":"file","mode":420,"hash":"` + sum + `"}]`))
	b.Done()
	if _, err := s.ReadTree(hostile); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a tree naming ../escape = %v", err)
	}
}

func TestTheCapIsKept(t *testing.T) {
	s, _ := Open(t.TempDir(), 100)
	if err := s.Room(101); !errors.Is(err, ErrOverCap) {
		t.Errorf("room past the cap = %v", err)
	}
	if err := s.Room(100); err != nil {
		t.Errorf("room at the cap = %v", err)
	}
}

func TestJournal(t *testing.T) {
	s, _ := Open(t.TempDir(), 0)
	root := put(t, s, "x")
	if j, err := s.PendingRestore(); j != nil || err != nil {
		t.Fatalf("pending = %+v, %v", j, err)
	}
	if err := s.BeginRestore(Journal{Target: "c1", TargetRoot: root}); err != nil {
		t.Fatal(err)
	}
	// The target of a pending restore is kept by collection even unrecorded.
	if _, err := s.Collect(); err != nil || !s.Has(root) {
		t.Errorf("collection took a pending restore's tree: %v", err)
	}
	if j, _ := s.PendingRestore(); j == nil || j.Target != "c1" {
		t.Errorf("pending = %+v", j)
	}
	if err := s.EndRestore(); err != nil {
		t.Fatal(err)
	}
	if j, _ := s.PendingRestore(); j != nil {
		t.Errorf("journal left: %+v", j)
	}
}
