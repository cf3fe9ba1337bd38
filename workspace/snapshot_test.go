package workspace

import "testing"

// TestSnapshotFollowsTheAgentsOrder applies changes in another order than
// the agent made them, as concurrent calls answer: the record must show the
// change with the highest sequence, and count every write.
func TestSnapshotFollowsTheAgentsOrder(t *testing.T) {
	t.Parallel()
	var s snapshot
	s.wrote("a.txt", 20, 3) // the later write answers first
	s.wrote("a.txt", 10, 2)
	s.removed("d", 5)
	s.wrote("d/b.txt", 7, 4) // made before the removal, answered after it
	got := map[string]TouchedFile{}
	for _, f := range s.list() {
		got[f.Path] = f
	}
	if a := got["a.txt"]; a.SizeBytes != 20 || a.Version != 2 || a.Deleted {
		t.Errorf("a.txt = %+v, want size 20 from seq 3, version 2", a)
	}
	if b := got["d/b.txt"]; !b.Deleted {
		t.Errorf("d/b.txt = %+v, want deleted: the removal of d came after its write", b)
	}
	s.wrote("d/b.txt", 9, 6)
	for _, f := range s.list() {
		if f.Path == "d/b.txt" && (f.Deleted || f.SizeBytes != 9) {
			t.Errorf("d/b.txt = %+v, want written again by seq 6", f)
		}
	}
}
