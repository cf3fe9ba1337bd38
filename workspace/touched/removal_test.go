package touched

import (
	"fmt"
	"testing"

	"github.com/wink-mcp/wink-mcp/wire"
)

// BenchmarkSnapshotCommandedRemovals: one report of a command removing
// 2,048 files (rm -rf of a burst) into a full snapshot. The snapshot's
// lock is held meanwhile, and a tool's write waits for it.
func BenchmarkSnapshotCommandedRemovals(b *testing.B) {
	var s Snapshot
	for i := range MaxSnapshotFiles {
		s.Wrote(fmt.Sprintf("burst/f%d", i), 2, int64(i+1))
	}
	removals := make([]wire.Change, wire.MaxChanges)
	for i := range removals {
		removals[i] = wire.Change{Path: fmt.Sprintf("burst/f%d", i), Removed: true, Seq: int64(MaxSnapshotFiles + 1)}
	}
	for b.Loop() {
		s.Commanded(removals)
	}
}

// TestSnapshotRemovalReachesWhatIsBelow: a removal marks removed the
// listed paths below it, however they were listed, and nothing beside it.
func TestSnapshotRemovalReachesWhatIsBelow(t *testing.T) {
	var s Snapshot
	s.Wrote("a/b/c.txt", 1, 1)
	s.Wrote("a/bc.txt", 1, 2)
	s.Commanded([]wire.Change{{Path: "a/b/d.txt", SizeBytes: 1, Seq: 3}})
	got := s.Commanded([]wire.Change{{Path: "a/b", Removed: true, Seq: 4}})
	if len(got) != 1 || got[0] != "a/b" {
		t.Errorf("affected %v, want [a/b]", got)
	}
	deleted := map[string]bool{}
	for _, f := range s.List() {
		deleted[f.Path] = f.Deleted
	}
	want := map[string]bool{"a/b": true, "a/b/c.txt": true, "a/b/d.txt": true, "a/bc.txt": false}
	for p, d := range want {
		if deleted[p] != d {
			t.Errorf("%s deleted %v, want %v (snapshot %v)", p, deleted[p], d, deleted)
		}
	}
	if removed := s.Removed("a/bc.txt", 5); len(removed) != 1 || removed[0] != "a/bc.txt" {
		t.Errorf("removing a/bc.txt affected %v", removed)
	}
}
