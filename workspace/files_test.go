package workspace

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSnapshotTracksWritesEditsAndRemovals(t *testing.T) {
	m, _, _ := newTestManager(t, nil)
	var changes [][]string
	m.OnChange(func(_ context.Context, sessionID string, paths []string) {
		if sessionID != "snap" {
			t.Errorf("change reported for session %q", sessionID)
		}
		changes = append(changes, paths)
	})
	s, _ := m.Session("snap")
	w1, err := s.files.WriteFile(ctx, "dir/a.txt", "one")
	if err != nil {
		t.Fatal(err)
	}
	w2, _ := s.files.WriteFile(ctx, "dir/a.txt", "two!")
	e, err := s.files.EditFile(ctx, EditRequest{Path: "dir/a.txt", Old: "two", New: "three"})
	if err != nil {
		t.Fatal(err)
	}
	if w1.Version != 1 || !w1.Created || w2.Version != 2 || w2.Created || e.Version != 3 || e.SizeBytes != 6 {
		t.Errorf("versions %d %d %d, created %v %v, size %d", w1.Version, w2.Version, e.Version, w1.Created, w2.Created, e.SizeBytes)
	}
	if _, err := s.files.WriteFile(ctx, "b.txt", "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.files.Remove(ctx, "dir"); err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"dir/a.txt"}, {"dir/a.txt"}, {"dir/a.txt"}, {"b.txt"}, {"dir", "dir/a.txt"}}
	if !slices.EqualFunc(changes, want, slices.Equal) {
		t.Errorf("changes reported %q, want %q", changes, want)
	}
	if text, err := s.files.ReadWhole(ctx, "b.txt"); err != nil || text != "b" {
		t.Errorf("ReadWhole = %q, %v", text, err)
	}
	snap := s.files.Snapshot()
	if len(snap) != 3 {
		t.Fatalf("snapshot %+v", snap)
	}
	a, b, dir := snap[2], snap[0], snap[1]
	if a.Path != "dir/a.txt" || !a.Deleted || a.Version != 3 || a.Updated.Before(a.Created) {
		t.Errorf("dir/a.txt entry %+v", a)
	}
	if b.Path != "b.txt" || b.Deleted || b.SizeBytes != 1 || dir.Path != "dir" || !dir.Deleted {
		t.Errorf("entries %+v %+v", b, dir)
	}
	if _, err := s.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if len(s.files.Snapshot()) != 0 {
		t.Error("reset kept the snapshot")
	}
}

func TestPythonMissingNamesTheImage(t *testing.T) {
	m, _, _ := newTestManager(t, nil)
	s, _ := m.Session("nopython")
	if _, err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir()) // the in-process agent looks python3 up in this PATH
	_, err := s.files.Python(ctx, PythonRequest{Code: "1", Timeout: time.Second, OutputChars: 10})
	if err == nil || !strings.Contains(err.Error(), "the image test-image has none") {
		t.Errorf("err = %v", err)
	}
}
