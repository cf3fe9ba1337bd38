package touched

import (
	"fmt"
	"slices"
	"testing"

	"github.com/wink-mcp/wink-mcp/wire"
)

// TestSnapshotFollowsTheAgentsOrder applies changes in another order than
// the agent made them, as concurrent calls answer: the record must show the
// change with the highest sequence, and count every write.
func TestSnapshotFollowsTheAgentsOrder(t *testing.T) {
	t.Parallel()
	var s Snapshot
	s.Wrote("a.txt", 20, 3) // the later write answers first
	s.Wrote("a.txt", 10, 2)
	s.Removed("d", 5)
	s.Wrote("d/b.txt", 7, 4) // made before the removal, answered after it
	got := map[string]TouchedFile{}
	for _, f := range s.List() {
		got[f.Path] = f
	}
	if a := got["a.txt"]; a.SizeBytes != 20 || a.Version != 2 || a.Deleted {
		t.Errorf("a.txt = %+v, want size 20 from seq 3, version 2", a)
	}
	if b := got["d/b.txt"]; !b.Deleted {
		t.Errorf("d/b.txt = %+v, want deleted: the removal of d came after its write", b)
	}
	s.Wrote("d/b.txt", 9, 6)
	for _, f := range s.List() {
		if f.Path == "d/b.txt" && (f.Deleted || f.SizeBytes != 9) {
			t.Errorf("d/b.txt = %+v, want written again by seq 6", f)
		}
	}
}

// TestSnapshotRecordsCommands: a command's changes are recorded with who
// made them and in the agent's order with the tools' own, a directory
// that replaced a listed file removes it, and past MaxSnapshotFiles the
// changes are counted by top-level directory, then as unlisted, so the
// snapshot stays bounded.
func TestSnapshotRecordsCommands(t *testing.T) {
	t.Parallel()
	var s Snapshot
	s.Wrote("tool.txt", 4, 10)
	affected := s.Commanded([]wire.Change{
		{Path: "tool.txt", SizeBytes: 9, Seq: 5}, // older than the tool's write
		{Path: "made.txt", SizeBytes: 3, Seq: 11},
		{Path: "becomes-dir", SizeBytes: 1, Seq: 11},
		{Path: "node_modules", Folded: 500, Seq: 11},
		{Path: "big", Unwatched: true, Seq: 11},
	})
	if !slices.Equal(affected, []string{"tool.txt", "made.txt", "becomes-dir", "node_modules", "big"}) {
		t.Errorf("affected = %v", affected)
	}
	s.Commanded([]wire.Change{{Path: "becomes-dir", Dir: true, Seq: 12}, {Path: "a-new-dir", Dir: true, Seq: 12}})
	got := map[string]TouchedFile{}
	for _, f := range s.List() {
		got[f.Path] = f
	}
	if f := got["tool.txt"]; f.ChangedBy != ByTool || f.SizeBytes != 4 || f.Version != 2 {
		t.Errorf("tool.txt = %+v, want the tool's state (seq 10 > 5), two writes", f)
	}
	if f := got["made.txt"]; f.ChangedBy != ByCommand || f.SizeBytes != 3 {
		t.Errorf("made.txt = %+v", f)
	}
	if f := got["becomes-dir"]; !f.Deleted || f.ChangedBy != ByCommand {
		t.Errorf("becomes-dir = %+v, want the file deleted", f)
	}
	if f := got["node_modules"]; f.Folded != 500 {
		t.Errorf("node_modules = %+v, want 500 folded", f)
	}
	if _, ok := got["big"]; ok {
		t.Error("an unwatched directory is listed: nothing is known of it")
	}
	if _, ok := got["a-new-dir"]; ok {
		t.Error("a directory made where no file was is listed")
	}

	for i := range MaxSnapshotFiles + 100 {
		s.Commanded([]wire.Change{{Path: fmt.Sprintf("node_modules/p%d/f", i), SizeBytes: 1, Seq: 20}})
	}
	s.Commanded([]wire.Change{{Path: "src/main.go", Seq: 21}, {Path: "", Folded: 7, Seq: 21}})
	if n := len(s.List()); n != MaxSnapshotFiles {
		t.Errorf("%d entries, want the bound %d", n, MaxSnapshotFiles)
	}
	if s.UnlistedChanges() != 8 {
		t.Errorf("unlisted = %d, want 8 (src/main.go and the 7 of the whole workspace)", s.UnlistedChanges())
	}
	for _, f := range s.List() {
		if f.Path == "node_modules" && f.Folded <= 500 {
			t.Errorf("node_modules folded %d: the changes past the bound were not counted in it", f.Folded)
		}
	}
}
