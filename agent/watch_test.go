//go:build linux

package agent

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/wink-mcp/wink-mcp/wire"
)

// watchedAgent is an agent on a temp workspace that watches it.
func watchedAgent(t *testing.T, maxDirs int) (*Agent, string) {
	t.Helper()
	dir := t.TempDir()
	a, err := New(Config{Workspace: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if st := a.watch.start(maxDirs); maxDirs > 0 && st.State != wire.WatchFull {
		t.Fatalf("watch state = %+v, want full", st)
	}
	return a, dir
}

// report is every change pending, by path.
func report(t *testing.T, a *Agent) map[string]wire.Change {
	t.Helper()
	out := map[string]wire.Change{}
	for {
		res := a.reportChanges(wire.MaxChanges)
		for _, c := range res.Changes {
			out[c.Path] = c
		}
		if !res.More {
			return out
		}
	}
}

// TestWatchReportsWhatCommandsDo: files made, changed, moved and removed
// by other processes, in directories made after the watch began, are
// reported once each, as they are when reported.
func TestWatchReportsWhatCommandsDo(t *testing.T) {
	a, dir := watchedAgent(t, 100)
	mustWrite(t, filepath.Join(dir, "old.txt"), "old")
	if got := report(t, a); got["old.txt"].SizeBytes != 3 || got["old.txt"].Removed {
		t.Fatalf("after a write: %+v", got)
	}
	mustWrite(t, filepath.Join(dir, "a/b/c/deep.txt"), "deep!")
	for range 10 {
		mustWrite(t, filepath.Join(dir, "a/b/c/deep.txt"), "deeper")
	}
	if err := os.Rename(filepath.Join(dir, "old.txt"), filepath.Join(dir, "a/new.txt")); err != nil {
		t.Fatal(err)
	}
	got := report(t, a)
	want := map[string]wire.Change{
		"a/b/c/deep.txt": {Path: "a/b/c/deep.txt", SizeBytes: 6},
		"a/new.txt":      {Path: "a/new.txt", SizeBytes: 3},
		"old.txt":        {Path: "old.txt", Removed: true},
	}
	for p, w := range want {
		g := got[p]
		if g.SizeBytes != w.SizeBytes || g.Removed != w.Removed || g.Seq == 0 {
			t.Errorf("%s: got %+v, want %+v", p, g, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("reported %v, want only %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	if err := os.RemoveAll(filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	if got := report(t, a); !got["a"].Removed {
		t.Errorf("after rm -rf a: %+v", got)
	}
	if n := len(a.watch.byPath); n != 1 {
		t.Errorf("%d directories watched after the tree went, want 1 (the workspace): %v", n, a.watch.byPath)
	}
}

// TestWatchLeavesToolChangesToTheTools: the file tools report their own
// changes, so the watch reports none of them, nor their temporary files,
// but it does report a command's change of the same file afterwards.
func TestWatchLeavesToolChangesToTheTools(t *testing.T) {
	a, dir := watchedAgent(t, 100)
	if _, werr := a.files.write(wire.WriteArgs{Path: "x/y/tool.txt", Content: "by a tool"}); werr != nil {
		t.Fatal(werr)
	}
	if _, werr := a.files.edit(wire.EditArgs{Path: "x/y/tool.txt", Old: "tool", New: "TOOL"}); werr != nil {
		t.Fatal(werr)
	}
	if _, werr := a.files.edit(wire.EditArgs{Path: "x/y/tool.txt", Old: "absent", New: "z"}); werr == nil {
		t.Fatal("an edit of absent text succeeded")
	}
	mustWrite(t, filepath.Join(dir, "x/y/gone/f"), "f")
	report(t, a)
	if _, werr := a.files.remove("x/y/gone"); werr != nil {
		t.Fatal(werr)
	}
	if got := report(t, a); len(got) != 0 {
		t.Errorf("tool changes reported as a command's: %+v", got)
	}
	mustWrite(t, filepath.Join(dir, "x/y/tool.txt"), "by a command")
	if got := report(t, a); got["x/y/tool.txt"].SizeBytes != int64(len("by a command")) {
		t.Errorf("a command's change after the tool's: %+v", got)
	}
	// A command's change pending when a tool rewrites the file is the tool's to report.
	mustWrite(t, filepath.Join(dir, "x/y/tool.txt"), "command again")
	if _, werr := a.files.write(wire.WriteArgs{Path: "x/y/tool.txt", Content: "tool wins"}); werr != nil {
		t.Fatal(werr)
	}
	if got := report(t, a); len(got) != 0 {
		t.Errorf("a change the tool superseded was reported: %+v", got)
	}
}

// TestWatchCoalescesABurst: 20,000 files in a tree of directories (an npm
// install) make few reports and a bounded set, each file either listed or
// counted in a folded directory, and the command's own result carries at
// most inlineChanges of them.
func TestWatchCoalescesABurst(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 20,000 files")
	}
	a, dir := watchedAgent(t, 10_000)
	const files = 20_000
	for i := range files {
		mustWrite(t, filepath.Join(dir, fmt.Sprintf("node_modules/pkg%03d/lib/f%05d.js", i%500, i)), "x")
	}
	a.watch.mu.Lock()
	a.watch.drainLocked(nil)
	held := len(a.watch.pending.files) + len(a.watch.pending.folds)
	a.watch.mu.Unlock()
	if held > maxPendingFiles+maxPendingFolds {
		t.Errorf("%d entries pending, more than the bound %d", held, maxPendingFiles+maxPendingFolds)
	}
	inline := a.commandChanges()
	if len(inline) != inlineChanges {
		t.Errorf("the command's result carries %d changes, want %d", len(inline), inlineChanges)
	}
	got := report(t, a)
	for _, c := range inline {
		got[c.Path] = c
	}
	folded := 0
	for _, c := range got {
		if c.Folded > 0 {
			folded++
		}
	}
	for i := range files {
		p := fmt.Sprintf("node_modules/pkg%03d/lib/f%05d.js", i%500, i)
		if _, ok := got[p]; ok {
			continue
		}
		covered := false
		for d := parentOf(p); ; d = parentOf(d) {
			if got[d].Folded > 0 {
				covered = true
			}
			if d == "" || covered {
				break
			}
		}
		if !covered {
			t.Fatalf("%s is neither listed nor under a folded directory", p)
		}
	}
	t.Logf("20,000 files: %d entries, %d of them folded directories; %d directories watched", len(got), folded, len(a.watch.byPath))
}

// TestWatchSurvivesAQueueOverflow: when the kernel drops events, the
// report says everything may have changed, and every directory, even one
// made while events were dropped, is watched again.
func TestWatchSurvivesAQueueOverflow(t *testing.T) {
	a, dir := watchedAgent(t, 1000)
	for i := range 50 {
		mustWrite(t, filepath.Join(dir, fmt.Sprintf("d%d/first", i)), "x")
	}
	report(t, a)
	a.watch.mu.Lock() // nothing reads: the kernel's queue overflows
	for i := range 20_000 {
		mustWrite(t, filepath.Join(dir, fmt.Sprintf("d%d/f%d", i%50, i)), "x")
	}
	a.watch.mu.Unlock()
	if got := report(t, a); got[""].Folded == 0 {
		t.Fatalf("after an overflow: no change of the whole workspace in %d changes", len(got))
	}
	mustWrite(t, filepath.Join(dir, "d49/new/later"), "x")
	if got := report(t, a); len(got) != 1 || got["d49/new/later"].SizeBytes != 1 {
		t.Errorf("after the overflow, a change in a directory made during it: %+v", got)
	}
}

// TestWatchLimitFallsBack: past --watch-dirs, a directory is left
// unwatched, the status says so, and the unwatched directories are
// reported as possibly changed at each command's end (even one that made
// them an instant before) and whenever one is made; the command itself is
// not held up.
func TestWatchLimitFallsBack(t *testing.T) {
	a, dir := watchedAgent(t, 3)
	for _, d := range []string{"one", "two", "three", "four"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(t, filepath.Join(dir, "four/f"), "x")
	unwatched := func(changes []wire.Change) []string {
		var out []string
		for _, c := range changes {
			if c.Unwatched {
				out = append(out, c.Path)
			}
		}
		slices.Sort(out)
		return out
	}
	// No report has read the events yet: the command's end must.
	if got := unwatched(a.commandChanges()); !slices.Equal(got, []string{"four", "three"}) && !slices.Equal(got, []string{"four", "one"}) {
		t.Fatalf("at the end of the command that made them, the unwatched directories reported are %q", got)
	}
	if !a.watch.reportable() {
		t.Fatal("the status changed as the command ran, and no report waits to say so")
	}
	res := a.reportChanges(wire.MaxChanges)
	if res.Watch.State != wire.WatchPartial || len(res.Watch.Unwatched) != 2 || !strings.Contains(res.Watch.Reason, "--watch-dirs") {
		t.Fatalf("status past the limit: %+v", res.Watch)
	}
	if len(res.Changes) != 0 {
		t.Errorf("unwatched directories reported again with no command run: %+v", res.Changes)
	}
	if got := unwatched(a.commandChanges()); !slices.Equal(got, res.Watch.Unwatched) {
		t.Errorf("after the next command, unwatched %q reported, want %q", got, res.Watch.Unwatched)
	}
	// A background job makes another: it is reported with no command ending.
	if err := os.Mkdir(filepath.Join(dir, "five"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := unwatched(a.reportChanges(wire.MaxChanges).Changes); !slices.Contains(got, "five") {
		t.Errorf("a directory made past the limit by a job is not reported: %q", got)
	}
}

// TestWatchRenameStorm: directories renamed back and forth many times
// leave exactly the watches of the tree as it ends, and later changes are
// reported under the final names.
func TestWatchRenameStorm(t *testing.T) {
	a, dir := watchedAgent(t, 1000)
	mustWrite(t, filepath.Join(dir, "a/sub/f"), "x")
	cur := "a"
	for i := range 2000 {
		next := fmt.Sprintf("r%d", i%7)
		if err := os.Rename(filepath.Join(dir, cur), filepath.Join(dir, next)); err != nil {
			t.Fatal(err)
		}
		cur = next
	}
	report(t, a)
	mustWrite(t, filepath.Join(dir, cur, "sub/g"), "y")
	got := report(t, a)
	if _, ok := got[cur+"/sub/g"]; !ok || len(got) != 1 {
		t.Errorf("after the storm: %+v, want only %s/sub/g", got, cur)
	}
	a.watch.mu.Lock()
	defer a.watch.mu.Unlock()
	if want := []string{"", cur, cur + "/sub"}; !slices.Equal(slices.Sorted(maps.Keys(a.watch.byPath)), want) {
		t.Errorf("watched %v, want %v", slices.Sorted(maps.Keys(a.watch.byPath)), want)
	}
}

// TestChangesWaitsAndCoalesces: OpChanges waits for a change, then for the
// rest of its burst, and a cancelled wait ends at once.
func TestChangesWaitsAndCoalesces(t *testing.T) {
	a, dir := watchedAgent(t, 100)
	go func() {
		for i := range 20 {
			mustWrite(t, filepath.Join(dir, fmt.Sprintf("f%d", i)), "x")
		}
	}()
	seen, reports := 0, 0
	for seen < 20 && reports < 20 {
		res, werr := a.changes(context.Background(), wire.ChangesArgs{WaitMillis: 5000})
		if werr != nil {
			t.Fatal(werr)
		}
		seen, reports = seen+len(res.Changes), reports+1
	}
	if seen != 20 || reports > 2 {
		t.Errorf("a burst of 20 files: %d changes in %d reports, want 20 in one or two", seen, reports)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, werr := a.changes(ctx, wire.ChangesArgs{WaitMillis: 60_000}); werr == nil || werr.Code != wire.CodeCancelled {
		t.Errorf("a cancelled wait: %v", werr)
	}
}

// TestWatchUnderConcurrentToolsAndCommands: tools and other processes
// writing at once, while reports are taken: every process's file is
// reported, and no tool's.
func TestWatchUnderConcurrentToolsAndCommands(t *testing.T) {
	a, dir := watchedAgent(t, 1000)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 100 {
				if _, werr := a.files.write(wire.WriteArgs{Path: fmt.Sprintf("tool/%d/%d", w, i), Content: "t"}); werr != nil {
					t.Error(werr)
				}
			}
		})
		wg.Go(func() {
			for i := range 100 {
				mustWrite(t, filepath.Join(dir, fmt.Sprintf("cmd/%d/%d", w, i)), "c")
			}
		})
	}
	got := map[string]wire.Change{}
	stop := make(chan struct{})
	reported := make(chan struct{})
	go func() {
		defer close(reported)
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, c := range a.reportChanges(wire.MaxChanges).Changes {
				got[c.Path] = c
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-reported
	maps.Copy(got, report(t, a))
	for w := range 8 {
		for i := range 100 {
			if c, ok := got[fmt.Sprintf("cmd/%d/%d", w, i)]; !ok || c.SizeBytes != 1 {
				t.Fatalf("cmd/%d/%d: %+v, %v", w, i, c, ok)
			}
		}
	}
	for p := range got {
		if strings.HasPrefix(p, "tool/") {
			t.Errorf("a tool's change was reported as a process's: %s", p)
		}
	}
}
