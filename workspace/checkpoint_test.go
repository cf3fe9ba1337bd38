package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/internal/testwait"
	"github.com/wink-mcp/wink-mcp/workspace/capture"
	"github.com/wink-mcp/wink-mcp/workspace/checkpoint"
)

// treeState describes every entry under dir as the host sees it: kind,
// mode bits, and content hash or link target. It is the oracle of the
// checkpoint tests: a restore must give back exactly the same map.
func treeState(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		m := info.Mode()
		desc := fmt.Sprintf("%s %o", m.Type(), m.Perm()|m&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky))
		switch {
		case m&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			desc += " -> " + target
		case m.IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			desc += " " + hex.EncodeToString(sum[:8])
		}
		out[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// plantHostile makes, with a command, every kind of entry a checkpoint
// must keep exactly: modes with setuid/setgid/sticky, a read-only
// directory with files in it, empty directories, relative, absolute and
// dangling symlinks, a symlink to a directory, a fifo, hard links, and
// names that are not UTF-8, hold a newline, or look like overlay whiteouts.
func plantHostile(t *testing.T, s *Session) {
	t.Helper()
	script := `set -e
mkdir -p src/pkg empty/nested ro-dir "sp ace"
printf 'package main\n' > src/main.go
printf 'x' > src/pkg/a.txt
chmod 0755 src/main.go
printf 'secret' > src/private && chmod 0600 src/private
printf 'g' > setgid && chmod 2755 setgid
mkdir sticky && chmod 1777 sticky
printf 'in ro' > ro-dir/f && chmod 0555 ro-dir
ln -s pkg/a.txt src/rel-link
ln -s /etc/passwd abs-link
ln -s does/not/exist dangling
ln -s src dir-link
mkfifo pipe
printf 'linked' > hard1 && ln hard1 hard2
printf 'bad name' > "$(printf 'bad\377name')"
printf 'nl' > "$(printf 'new\nline')"
printf 'wh' > .wh.README && printf 'opq' > .wh..wh..opq
head -c 300000 /dev/urandom > "sp ace/big.bin"
`
	res := echo(t, s, "sh", "-c", script)
	if res.ExitCode != 0 {
		t.Fatalf("planting: %s", res.Stderr)
	}
}

func TestCheckpointRestoreGivesBackEveryEntryExactly(t *testing.T) {
	m, _, _ := newTestManager(t, nil)
	s, _ := m.Session("cp")
	plantHostile(t, s)
	want := treeState(t, s.workspaceDir())
	cp, err := s.checkpoints.Checkpoint(ctx, "planted")
	if err != nil {
		t.Fatal(err)
	}
	if cp.ID != "c1" || cp.Fifos != 1 || cp.Symlinks != 4 || cp.Message != "planted" {
		t.Errorf("checkpoint = %+v", cp)
	}
	// Change everything a model might: remove all, replace kinds, chmod.
	res := echo(t, s, "sh", "-c", `chmod 0755 ro-dir && rm -rf ./* ./.wh* && mkdir src && printf other > src/main.go &&
printf file > dir-link && mkdir pipe && ln -s /tmp hard1 && printf new > added && mkdir -p deep/er/est && chmod 0500 deep`)
	if res.ExitCode != 0 {
		t.Fatalf("changing: %s", res.Stderr)
	}
	r, err := s.checkpoints.Restore(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if got := treeState(t, s.workspaceDir()); !maps.Equal(got, want) {
		t.Errorf("after restore:\n%s\nwant:\n%s", render(got), render(want))
	}
	if r.Before.ID != "c2" || r.Before.Auto == "" {
		t.Errorf("the state replaced was not saved: %+v", r.Before)
	}
	// The restore can be undone, and redone.
	if _, err := s.checkpoints.Restore(ctx, "c2"); err != nil {
		t.Fatal(err)
	}
	if got := treeState(t, s.workspaceDir()); got["added"] == "" || got["src/main.go"] == want["src/main.go"] {
		t.Errorf("undo did not bring back the changed state: %s", render(got))
	}
	if _, err := s.checkpoints.Restore(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	if got := treeState(t, s.workspaceDir()); !maps.Equal(got, want) {
		t.Errorf("after the second restore:\n%s\nwant:\n%s", render(got), render(want))
	}
}

func render(m map[string]string) string {
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		lines = append(lines, fmt.Sprintf("%q %s", k, m[k]))
	}
	return strings.Join(lines, "\n")
}

func TestCheckpointStoresOnlyWhatChanged(t *testing.T) {
	m, _, logs := newTestManager(t, nil)
	s, _ := m.Session("incremental")
	echo(t, s, "sh", "-c", `for d in 1 2 3 4 5; do mkdir d$d; for f in 1 2 3 4 5 6 7 8 9 10; do head -c 2000 /dev/urandom > d$d/f$f; done; done`)
	// Files changed within a clock tick of a checkpoint are read again by
	// the next; let these age past that window.
	time.Sleep(capture.RacyWindow + 100*time.Millisecond)
	first, err := s.checkpoints.Checkpoint(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if first.Files != 50 || first.Added < 100_000 {
		t.Fatalf("first checkpoint = %+v", first)
	}
	echo(t, s, "sh", "-c", `head -c 2000 /dev/urandom > d3/f4`)
	second, err := s.checkpoints.Checkpoint(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	// One file and the trees of d3 and the root are new.
	if second.Added > 2000+4*1024 {
		t.Errorf("the second checkpoint added %d bytes for one changed file of 2000", second.Added)
	}
	if !logs.contains(`"fetched_files":1,`) {
		t.Errorf("the second checkpoint read more than the changed file: %s", logs)
	}
	list, err := s.checkpoints.Checkpoints(ctx)
	if err != nil || len(list.Checkpoints) != 2 || list.StoreBytes != first.Added+second.Added {
		t.Errorf("list = %+v, %v", list, err)
	}
}

func TestRestoreStopsRunningCommandsAndJobs(t *testing.T) {
	m, _, _ := newTestManager(t, nil)
	s, _ := m.Session("stops")
	echo(t, s, "sh", "-c", "echo kept > f")
	if _, err := s.checkpoints.Checkpoint(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.jobs.StartJob(ctx, JobRequest{Argv: []string{"sleep", "100"}, Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Exec(ctx, ExecRequest{Argv: []string{"sh", "-c", "echo late > f; sleep 100"}, Timeout: time.Minute, OutputLimit: 10})
		done <- err
	}()
	testwait.For(t, "the command to write f", func() bool {
		data, _ := os.ReadFile(filepath.Join(s.workspaceDir(), "f"))
		return string(data) == "late\n"
	})
	r, err := s.checkpoints.Restore(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if r.StoppedCommands != 1 || r.StoppedJobs != 1 {
		t.Errorf("stopped %d commands and %d jobs, want 1 and 1", r.StoppedCommands, r.StoppedJobs)
	}
	if err := <-done; !errors.Is(err, ErrStoppedForRestore) {
		t.Errorf("the running command returned %v, want ErrStoppedForRestore", err)
	}
	if data, _ := os.ReadFile(filepath.Join(s.workspaceDir(), "f")); string(data) != "kept\n" {
		t.Errorf("f = %q after the restore", data)
	}
}

// TestRestoreRacingWritesTearsNothing races writes to one file against
// restores: each write lands wholly before a restore (and is undone) or
// after it (and stays); no write is lost halfway, nothing is left beside.
func TestRestoreRacingWritesTearsNothing(t *testing.T) {
	m, _, _ := newTestManager(t, nil)
	s, _ := m.Session("race")
	if _, err := s.files.WriteFile(ctx, "f.txt", "checkpointed"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.checkpoints.Checkpoint(ctx, ""); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			if _, err := s.files.WriteFile(ctx, "f.txt", strings.Repeat(fmt.Sprint(i%10), 10_000)); err != nil {
				t.Errorf("write %d: %v", i, err)
			}
		})
		if i%10 == 0 {
			wg.Go(func() {
				if _, err := s.checkpoints.Restore(ctx, "c1"); err != nil {
					t.Errorf("restore: %v", err)
				}
			})
		}
	}
	wg.Wait()
	data, err := os.ReadFile(filepath.Join(s.workspaceDir(), "f.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if text := string(data); text != "checkpointed" && (len(text) != 10_000 || strings.Trim(text, text[:1]) != "") {
		t.Errorf("f.txt is torn: %d bytes starting %q", len(text), text[:min(20, len(text))])
	}
	entries, _ := os.ReadDir(s.workspaceDir())
	if len(entries) != 1 {
		t.Errorf("the workspace holds %d entries, want f.txt alone", len(entries))
	}
}

func TestCheckpointDiffShowsWhatChanged(t *testing.T) {
	m, _, _ := newTestManager(t, nil)
	s, _ := m.Session("diff")
	echo(t, s, "sh", "-c", "mkdir -p a/b && printf 'one\\ntwo\\n' > a/b/f.txt && printf 'same\\n' > same.txt")
	if _, err := s.checkpoints.Checkpoint(ctx, ""); err != nil {
		t.Fatal(err)
	}
	echo(t, s, "sh", "-c", "printf 'one\\nthree\\n' > a/b/f.txt && printf 'new\\n' > new.txt")
	if _, err := s.checkpoints.Checkpoint(ctx, ""); err != nil {
		t.Fatal(err)
	}
	echo(t, s, "sh", "-c", "rm same.txt")
	for _, tc := range []struct {
		to, prefix string
		want, not  []string
	}{
		{to: "c2", want: []string{"-two", "+three", "+++ b/new.txt"}, not: []string{"same.txt"}},
		{to: CheckpointNow, want: []string{"+three", "--- a/same.txt", "deleted file mode"}},
		{to: CheckpointNow, prefix: "a", want: []string{"+three"}, not: []string{"new.txt", "same.txt"}},
	} {
		d, err := s.checkpoints.CheckpointDiff(ctx, "c1", tc.to, tc.prefix)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(d.Text, w) {
				t.Errorf("diff c1..%s %q lacks %q:\n%s", tc.to, tc.prefix, w, d.Text)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(d.Text, n) {
				t.Errorf("diff c1..%s %q shows %q:\n%s", tc.to, tc.prefix, n, d.Text)
			}
		}
	}
	if _, err := s.checkpoints.CheckpointDiff(ctx, "c9", CheckpointNow, ""); !errors.Is(err, ErrCheckpointNotFound) {
		t.Errorf("diff from a missing checkpoint = %v", err)
	}
}

// TestUnfinishedRestoreIsFinishedBeforeTheNextCall stands for a process
// killed in the middle of a restore: its journal is on disk, the files are
// half way; the next call must first bring them to the checkpoint.
func TestUnfinishedRestoreIsFinishedBeforeTheNextCall(t *testing.T) {
	m, _, _ := newTestManager(t, nil)
	s, _ := m.Session("journal")
	echo(t, s, "sh", "-c", "printf a > a && printf b > b")
	cp, err := s.checkpoints.Checkpoint(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	want := treeState(t, s.workspaceDir())
	echo(t, s, "sh", "-c", "rm a && printf half > b && printf c > c")
	st, _ := s.checkpoints.Store()
	if err := st.BeginRestore(checkpoints.Journal{Target: cp.ID, TargetRoot: cp.Root}); err != nil {
		t.Fatal(err)
	}
	// A new owner of the workspace opens its store and finds the journal.
	reopenCheckpoints(t, s)
	if _, err := s.files.List(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if got := treeState(t, s.workspaceDir()); !maps.Equal(got, want) {
		t.Errorf("after the next call:\n%s\nwant:\n%s", render(got), render(want))
	}
	if j, _ := st.PendingRestore(); j != nil {
		t.Errorf("the journal is still there: %+v", j)
	}
}

func TestIdleCleanupTakesACheckpointFirst(t *testing.T) {
	m, eng, logs := newTestManager(t, func(c *Config) { c.IdleTimeout = 100 * time.Millisecond })
	s, _ := m.Session("idle")
	if _, err := s.files.WriteFile(ctx, "work.txt", "not lost"); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the idle clean-up", func() bool { return eng.count() == 0 })
	list, err := s.checkpoints.Checkpoints(ctx)
	if err != nil || len(list.Checkpoints) != 1 || list.Checkpoints[0].Auto != "idle" {
		t.Fatalf("checkpoints after the idle clean-up = %+v, %v; logs:\n%s", list, err, logs)
	}
}

func TestCheckpointBadIDsAndTheCap(t *testing.T) {
	m, _, _ := newTestManager(t, func(c *Config) { c.CheckpointBytes = 16 << 20 })
	s, _ := m.Session("bad")
	for _, id := range []string{"c0", "c1", "x", "../c1", "c01"} {
		if _, err := s.checkpoints.Restore(ctx, id); !errors.Is(err, ErrCheckpointNotFound) {
			t.Errorf("restore %q = %v, want not found", id, err)
		}
	}
	echo(t, s, "sh", "-c", "head -c 20000000 /dev/zero > big")
	_, err := s.checkpoints.Checkpoint(ctx, "")
	if !errors.Is(err, checkpoints.ErrOverCap) || !strings.Contains(err.Error(), "big 19.1 MiB") {
		t.Errorf("checkpoint past the cap = %v", err)
	}
	if list, _ := s.checkpoints.Checkpoints(ctx); list.StoreBytes != 0 {
		t.Errorf("a refused checkpoint left %d bytes in the store", list.StoreBytes)
	}
}

// TestCheckpointWhoseTreesPassTheCapIsRefused fills the cap with a file
// that fits, then needs tree objects past it (a folder of 3,000 folders):
// the checkpoint is refused as over the cap and leaves nothing, rather
// than recorded with trees that were never stored.
func TestCheckpointWhoseTreesPassTheCapIsRefused(t *testing.T) {
	m, _, _ := newTestManager(t, func(c *Config) { c.CheckpointBytes = 16 << 20 })
	s, _ := m.Session("trees")
	echo(t, s, "sh", "-c", "head -c $((16*1024*1024 - 4*1024)) /dev/zero > big && mkdir d && cd d && seq 3000 | xargs mkdir")
	if _, err := s.checkpoints.Checkpoint(ctx, ""); !errors.Is(err, checkpoints.ErrOverCap) {
		t.Errorf("checkpoint whose trees pass the cap = %v, want %v", err, checkpoints.ErrOverCap)
	}
	if list, err := s.checkpoints.Checkpoints(ctx); err != nil || len(list.Checkpoints) != 0 || list.StoreBytes != 0 {
		t.Errorf("after the refused checkpoint: %d checkpoints, %d bytes in the store, %v; want none", len(list.Checkpoints), list.StoreBytes, err)
	}
}

// TestRestoreToAnOldAutomaticCheckpointKeepsIt restores the oldest of the
// automatic checkpoints kept: the one the restore takes of the state it
// replaces must not push its own target out.
func TestRestoreToAnOldAutomaticCheckpointKeepsIt(t *testing.T) {
	m, _, _ := newTestManager(t, nil)
	s, _ := m.Session("autos")
	if _, err := s.files.WriteFile(ctx, "f", "v0"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.checkpoints.Checkpoint(ctx, "base"); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= checkpoint.KeptAutoCheckpoints+1; i++ {
		if _, err := s.files.WriteFile(ctx, "f", fmt.Sprint("v", i)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.checkpoints.Restore(ctx, "c1"); err != nil {
			t.Fatal(err)
		}
	}
	list, _ := s.checkpoints.Checkpoints(ctx)
	oldest := list.Checkpoints[1] // after the base, the oldest automatic one kept
	if len(list.Checkpoints) != checkpoint.KeptAutoCheckpoints+1 || oldest.Auto == "" {
		t.Fatalf("checkpoints = %+v", list.Checkpoints)
	}
	if _, err := s.checkpoints.Restore(ctx, oldest.ID); err != nil {
		t.Fatalf("restoring the oldest automatic checkpoint %s: %v", oldest.ID, err)
	}
	if text, _ := s.files.ReadWhole(ctx, "f"); text != "v2" {
		t.Errorf("f = %q, want v2", text)
	}
	list, _ = s.checkpoints.Checkpoints(ctx)
	if !slices.ContainsFunc(list.Checkpoints, func(c Checkpoint) bool { return c.ID == oldest.ID }) {
		t.Errorf("the checkpoint just restored was deleted: %+v", list.Checkpoints)
	}
}

// TestCheckpointOperationsRacingEachOther runs checkpoints, restores,
// diffs, deletions and writes at once: each succeeds or says why, and the
// store is whole afterwards (every checkpoint listed can be restored).
func TestCheckpointOperationsRacingEachOther(t *testing.T) {
	m, _, _ := newTestManager(t, nil)
	s, _ := m.Session("crowd")
	echo(t, s, "sh", "-c", "mkdir -p a b && for i in 1 2 3 4 5; do echo $i > a/$i; echo $i > b/$i; done")
	if _, err := s.checkpoints.Checkpoint(ctx, "base"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if _, err := s.files.WriteFile(ctx, fmt.Sprintf("a/w%d", i), "w"); err != nil {
				t.Errorf("write: %v", err)
			}
		})
		wg.Go(func() {
			if _, err := s.checkpoints.Checkpoint(ctx, fmt.Sprint("round ", i)); err != nil {
				t.Errorf("checkpoint: %v", err)
			}
		})
		wg.Go(func() {
			if _, err := s.checkpoints.CheckpointDiff(ctx, "c1", CheckpointNow, ""); err != nil {
				t.Errorf("diff: %v", err)
			}
		})
		if i%3 == 0 {
			wg.Go(func() {
				if _, err := s.checkpoints.Restore(ctx, "c1"); err != nil {
					t.Errorf("restore: %v", err)
				}
			})
		}
		if i == 5 {
			wg.Go(func() {
				list, _ := s.checkpoints.Checkpoints(ctx)
				if len(list.Checkpoints) > 2 {
					if _, err := s.checkpoints.DeleteCheckpoints(ctx, []string{list.Checkpoints[1].ID}); err != nil && !errors.Is(err, ErrCheckpointNotFound) {
						t.Errorf("delete: %v", err)
					}
				}
			})
		}
	}
	wg.Wait()
	list, err := s.checkpoints.Checkpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Every checkpoint listed is read whole by a diff (a restore of each
	// would prune the oldest automatic ones as it goes).
	for _, cp := range list.Checkpoints {
		if _, err := s.checkpoints.CheckpointDiff(ctx, cp.ID, CheckpointNow, ""); err != nil {
			t.Errorf("reading %s after the crowd: %v", cp.ID, err)
		}
	}
	if _, err := s.checkpoints.Restore(ctx, "c1"); err != nil {
		t.Errorf("restoring c1 after the crowd: %v", err)
	}
	if got := treeState(t, s.workspaceDir()); len(got) != 12 {
		t.Errorf("after restoring c1: %s", render(got))
	}
}
