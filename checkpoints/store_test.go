package checkpoints

import (
	"errors"
	"fmt"
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
	if err == nil {
		err = b.Flush()
	}
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
	os.Remove(filepath.Join(s.dir, counterFile))
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
	s2.mu.Lock()
	_, err = s2.collect()
	s2.mu.Unlock()
	if err != nil {
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
	large, _ := b.PutBlob(make([]byte, packMaxObject+1))
	must(t, b.Flush())
	b.Done()
	// Damage the packed object in its pack, and the loose one in its file.
	s.packMu.RLock()
	loc := s.packs[sum]
	s.packMu.RUnlock()
	f, err := os.OpenFile(s.packPath(loc.pack, ".pack"), os.O_RDWR, 0)
	must(t, err)
	_, err = f.WriteAt([]byte("C"), loc.off)
	must(t, err)
	f.Close()
	os.WriteFile(s.objectPath(large), []byte("changed"), 0o600)
	for _, damaged := range []string{sum, large} {
		r, err := s.OpenBlob(damaged)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadAll(r); !errors.Is(err, ErrCorrupt) {
			t.Errorf("reading a damaged object = %v, want ErrCorrupt", err)
		}
		r.Close()
	}
	for _, bad := range []string{"", "../x", strings.Repeat("Z", 64)} {
		if _, err := s.OpenBlob(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("OpenBlob(%q) = %v", bad, err)
		}
	}
	// A tree whose entries no scan makes is refused.
	b = s.Build()
	hostile, _ := b.PutTree([]Entry{{Name: "../escape", Kind: KindFile, Mode: 0o644, Hash: sum}})
	notATree, _ := b.PutBlob([]byte(`[{"name":"x","kind":"file"}]`))
	must(t, b.Flush())
	b.Done()
	if _, err := s.ReadTree(notATree); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a blob read as a tree = %v", err)
	}
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

// storeBytes sums the sizes of the files under dir: what the store really
// takes, whatever it counted.
func storeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	must(t, filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	}))
	return n
}

// TestTheCapHoldsAsWritten writes past the cap the ways a checkpoint can:
// a large file that grows while it is read (written a chunk at a time),
// small objects waiting for a pack, and many writers at once. Every write
// past the cap fails, the store's objects never pass it, and an aborted
// build leaves nothing behind.
func TestTheCapHoldsAsWritten(t *testing.T) {
	const limit = 3 << 20
	dir := t.TempDir()
	s, _ := Open(dir, limit)
	kept := put(t, s, "kept")
	if _, err := s.Commit(Checkpoint{Root: kept}); err != nil {
		t.Fatal(err)
	}
	base := s.Bytes()
	for _, tc := range []struct {
		name  string
		write func(b *Build) error
	}{
		{"a growing file", func(b *Build) error {
			w, err := b.NewBlob()
			if err != nil {
				return err
			}
			chunk := make([]byte, 256<<10)
			for i := 0; i < 2*limit/len(chunk); i++ {
				chunk[0] = byte(i)
				if _, err := w.Write(chunk); err != nil {
					w.Abort()
					return err
				}
			}
			_, err = w.Commit()
			return err
		}},
		{"small objects", func(b *Build) error {
			for i := 0; i < 2*limit/100_000; i++ {
				if _, err := b.PutBlob([]byte(strings.Repeat(fmt.Sprint(i), 100_000))); err != nil {
					return err
				}
			}
			return b.Flush()
		}},
		{"writers at once", func(b *Build) error {
			errs := make(chan error, 8)
			for g := range 8 {
				go func() {
					for i := 0; i < 2*limit/(packMaxObject/8); i++ {
						_, err := b.PutBlob([]byte(strings.Repeat(fmt.Sprint(g, "-", i), packMaxObject/8)))
						if err == nil && i%3 == 0 {
							err = b.Flush()
						}
						if err != nil {
							errs <- err
							return
						}
					}
					errs <- b.Flush()
				}()
			}
			var first error
			for range 8 {
				if err := <-errs; first == nil {
					first = err
				}
			}
			return first
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := s.Build()
			err := tc.write(b)
			if !errors.Is(err, ErrOverCap) {
				t.Errorf("writing past the cap = %v, want ErrOverCap", err)
			}
			if got := storeBytes(t, filepath.Join(dir, objectsDir)) + storeBytes(t, filepath.Join(dir, packsDir)) + storeBytes(t, filepath.Join(dir, tmpDir)); got > limit+idxRecord*100 {
				t.Errorf("the store holds %d bytes against a cap of %d", got, limit)
			}
			b.Abort()
			if s.Bytes() != base {
				t.Errorf("after the abort the store counts %d bytes, want %d", s.Bytes(), base)
			}
			s.mu.Lock()
			reserved := s.reserved
			s.mu.Unlock()
			if reserved != 0 {
				t.Errorf("%d bytes still reserved", reserved)
			}
			if got := storeBytes(t, filepath.Join(dir, objectsDir)) + storeBytes(t, filepath.Join(dir, tmpDir)); got != 0 {
				t.Errorf("the aborted build left %d bytes of loose or temporary objects", got)
			}
			if data, err := fs.ReadFile(s.FS(kept), "kept"); err != nil || string(data) != "kept" {
				t.Errorf("the committed checkpoint after the abort = %q, %v", data, err)
			}
		})
	}
	// A store reopened measures what the counts said.
	s2, err := Open(dir, limit)
	must(t, err)
	if s2.Bytes() != base {
		t.Errorf("reopened, the store measures %d bytes, want %d", s2.Bytes(), base)
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
	s.mu.Lock()
	_, err := s.collect()
	s.mu.Unlock()
	if err != nil || !s.Has(root) {
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

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestPacksSurviveAKilledWriterAndCollection leaves a pack without its
// index, as a writer killed between the two would, and collects a store
// whose packs hold live and dead objects: the live ones stay readable.
func TestPacksSurviveAKilledWriterAndCollection(t *testing.T) {
	dir := t.TempDir()
	s, _ := Open(dir, 0)
	keep := put(t, s, "kept-1", "kept-2")
	c1, _ := s.Commit(Checkpoint{Root: keep})
	gone := put(t, s, "gone-1", "gone-2", "gone-3")
	c2, _ := s.Commit(Checkpoint{Root: gone})
	os.WriteFile(filepath.Join(dir, packsDir, "deadbeefdeadbeef.pack"), []byte("half a pack"), 0o600)
	s2, err := Open(dir, 0)
	must(t, err)
	if fileExists(filepath.Join(dir, packsDir, "deadbeefdeadbeef.pack")) {
		t.Error("a pack without an index was kept")
	}
	if _, err := s2.Delete(c2.ID); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"kept-1", "kept-2"} {
		if data, err := fs.ReadFile(s2.FS(c1.Root), f); err != nil || string(data) != f {
			t.Errorf("%s after collection = %q, %v", f, data, err)
		}
	}
	if s2.Has(gone) {
		t.Error("the deleted checkpoint's tree is still stored")
	}
	s3, err := Open(dir, 0)
	must(t, err)
	if got, want := s3.Bytes(), s2.Bytes(); got != want {
		t.Errorf("measured %d bytes on reopening, %d counted", got, want)
	}
}

func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// TestAPackMostlyDeadIsRewritten stores two checkpoints in one pack and
// deletes the larger: the pack is rewritten with the live objects alone.
func TestAPackMostlyDeadIsRewritten(t *testing.T) {
	s, _ := Open(t.TempDir(), 0)
	b := s.Build()
	small, _ := b.PutBlob([]byte("small"))
	big, _ := b.PutBlob([]byte(strings.Repeat("big", 10_000)))
	rootA, _ := b.PutTree([]Entry{{Name: "s", Kind: KindFile, Mode: 0o644, Size: 5, Hash: small}})
	rootB, _ := b.PutTree([]Entry{{Name: "b", Kind: KindFile, Mode: 0o644, Size: 30_000, Hash: big}})
	must(t, b.Flush())
	b.Done()
	a, _ := s.Commit(Checkpoint{Root: rootA})
	bb, _ := s.Commit(Checkpoint{Root: rootB})
	before := s.Bytes()
	freed, err := s.Delete(bb.ID)
	must(t, err)
	if freed < 30_000 || s.Bytes() != before-freed {
		t.Errorf("freed %d of %d bytes; %d left", freed, before, s.Bytes())
	}
	if data, err := fs.ReadFile(s.FS(a.Root), "s"); err != nil || string(data) != "small" {
		t.Errorf("the live object after the rewrite = %q, %v", data, err)
	}
	if s.Has(big) {
		t.Error("the dead object survived the rewrite")
	}
	if packs, _ := os.ReadDir(filepath.Join(s.dir, packsDir)); len(packs) != 2 {
		t.Errorf("%d pack files, want one pack and its index", len(packs))
	}
}
