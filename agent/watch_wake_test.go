//go:build linux

package agent

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wink-mcp/wink-mcp/wire"
)

// TestJobEndWakesAWaitingReport: with the watch off, partial, or unable to
// start, a background job's end answers a report already waiting for
// changes (the server's long poll), naming what was not watched, instead
// of leaving it to its wait's end.
func TestJobEndWakesAWaitingReport(t *testing.T) {
	for _, tc := range []struct {
		name    string
		maxDirs int
		refuse  bool   // inotify refuses to start
		write   string // what the job writes
		want    string // the unwatched root reported
	}{
		{name: "off", maxDirs: 0, write: "f", want: ""},
		{name: "partial", maxDirs: 1, write: "a/f", want: "a"},
		{name: "could not start", maxDirs: 100, refuse: true, write: "f", want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Mkdir(filepath.Join(dir, "a"), 0o755); err != nil {
				t.Fatal(err)
			}
			a, err := New(Config{Workspace: dir})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { a.Close() })
			if tc.refuse {
				a.watch.initInotify = func() (int, error) { return -1, unix.EMFILE }
			}
			if st := a.watch.start(tc.maxDirs); st.State == wire.WatchFull {
				t.Fatalf("watch %+v, want it off or partial", st)
			}
			a.reportChanges(wire.MaxChanges) // the status, reported once
			started, werr := a.jobs.startJob(wire.JobStartArgs{Exec: wire.ExecArgs{Argv: []string{"sh", "-c", "sleep 0.3; echo x > " + tc.write}}})
			if werr != nil {
				t.Fatal(werr)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			res, werr := a.changes(ctx, wire.ChangesArgs{WaitMillis: 60_000})
			if werr != nil {
				t.Fatalf("the job's end did not answer the waiting report: %v", werr)
			}
			j, _ := a.jobs.get(started.Job.ID)
			if j.running() {
				t.Fatalf("answered %+v before the job ended", res)
			}
			if !slices.ContainsFunc(res.Changes, func(c wire.Change) bool { return c.Unwatched && c.Path == tc.want }) {
				t.Errorf("after the job's end: %+v, want %q reported as possibly changed", res.Changes, tc.want)
			}
		})
	}
}

// TestWatchStartsWhenInotifyFreesUp: a watch inotify refused at first
// (the host's instances all taken) says why, tries again, and once it
// starts is full, names the whole workspace as possibly changed once, and
// reports changes as ever.
func TestWatchStartsWhenInotifyFreesUp(t *testing.T) {
	dir := t.TempDir()
	a, err := New(Config{Workspace: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	refusals := 2
	real := a.watch.initInotify
	a.watch.initInotify = func() (int, error) {
		if refusals > 0 {
			refusals--
			return -1, unix.EMFILE
		}
		return real()
	}
	st := a.watch.start(100)
	if st.State != wire.WatchOff || !strings.Contains(st.Reason, "max_user_instances") || !strings.Contains(st.Reason, "tries again") {
		t.Fatalf("refused watch: %+v", st)
	}
	a.reportChanges(wire.MaxChanges)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var res *wire.ChangesResult
	for res == nil || res.Watch.State != wire.WatchFull {
		var werr *wire.Error
		if res, werr = a.changes(ctx, wire.ChangesArgs{WaitMillis: 60_000}); werr != nil {
			t.Fatalf("the watch never started: %v", werr)
		}
	}
	if !slices.ContainsFunc(res.Changes, func(c wire.Change) bool { return c.Unwatched && c.Path == "" }) {
		t.Errorf("the watch started: %+v, want the workspace reported as possibly changed until then", res.Changes)
	}
	mustWrite(t, filepath.Join(dir, "later/f"), "x")
	if got := report(t, a); got["later/f"].SizeBytes != 1 || got[""].Unwatched {
		t.Errorf("after the watch started: %+v, want later/f only", got)
	}
}

// TestWatchRetriesWhenRoomFrees: a directory left unwatched past
// --watch-dirs is watched once another is removed, reported once as
// possibly changed, and its changes are then reported one by one.
func TestWatchRetriesWhenRoomFrees(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"one", "two", "three"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	a, err := New(Config{Workspace: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	st := a.watch.start(3)
	if st.State != wire.WatchPartial || len(st.Unwatched) != 1 {
		t.Fatalf("watch: %+v, want one directory unwatched", st)
	}
	left := st.Unwatched[0]
	gone := "one"
	if left == gone {
		gone = "two"
	}
	a.reportChanges(wire.MaxChanges)
	if err := os.Remove(filepath.Join(dir, gone)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var lapsed bool
	for {
		res, werr := a.changes(ctx, wire.ChangesArgs{WaitMillis: 60_000})
		if werr != nil {
			t.Fatalf("%s was never watched: %v", left, werr)
		}
		lapsed = lapsed || slices.ContainsFunc(res.Changes, func(c wire.Change) bool { return c.Unwatched && c.Path == left })
		if res.Watch.State == wire.WatchFull {
			break
		}
	}
	if !lapsed {
		t.Errorf("%s was watched again without being reported as possibly changed", left)
	}
	mustWrite(t, filepath.Join(dir, left, "f"), "x")
	if got := report(t, a); got[left+"/f"].SizeBytes != 1 {
		t.Errorf("a change under %s once watched: %+v", left, got)
	}
}
