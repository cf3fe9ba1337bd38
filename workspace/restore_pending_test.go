package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/checkpoints"
)

// TestAnUnfinishedRestoreLeavesTheJobsReachable stands for a restore that
// can neither finish nor be undone (its checkpoint's content is damaged):
// the calls that read or change /workspace say why and how to go on, and
// the job tool, which may be what frees the disk, still answers.
func TestAnUnfinishedRestoreLeavesTheJobsReachable(t *testing.T) {
	m, _, _ := newTestManager(t, nil)
	s, _ := m.Session("stuck")
	echo(t, s, "sh", "-c", "head -c 2000000 /dev/urandom > big")
	cp, err := s.checkpoints.Checkpoint(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	echo(t, s, "sh", "-c", "rm big && echo other > other")
	objects, _ := filepath.Glob(filepath.Join(s.storeDir, "objects", "*", "*"))
	if len(objects) != 1 {
		t.Fatalf("loose objects: %v", objects)
	}
	if err := os.WriteFile(objects[0], []byte("damaged"), 0o600); err != nil {
		t.Fatal(err)
	}
	st, _ := s.checkpoints.Store()
	if err := st.BeginRestore(checkpoints.Journal{Target: cp.ID, TargetRoot: cp.Root}); err != nil {
		t.Fatal(err)
	}
	reopenCheckpoints(t, s)
	if _, err := s.files.List(ctx, ""); err == nil || !strings.Contains(err.Error(), "job action=forget") || !strings.Contains(err.Error(), "did not finish") {
		t.Errorf("a call on the half-restored workspace = %v", err)
	}
	if _, err := s.jobs.Jobs(ctx); err != nil {
		t.Errorf("listing jobs beside the unfinished restore: %v", err)
	}
}

// reopenCheckpoints stands for a new owner of s's workspace: a new
// checkpoints room opens the store, and finds the journal of a restore
// that did not finish.
func reopenCheckpoints(t *testing.T, s *Session) {
	t.Helper()
	s.checkpoints = s.newCheckpoints()
	if _, err := s.checkpoints.Store(); err != nil {
		t.Fatal(err)
	}
}
