//go:build linux

package agent

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wink-mcp/wink-mcp/wire"
)

// stormRenames bounds a storm: a test whose tool calls wait for the storm
// to end, not for their own events, sees it run to this many renames.
const stormRenames = 200_000

// renameStorm renames dir (a deep tree) back and forth in the workspace
// until stop is closed or stormRenames renames are made, and returns how
// many it made once it ended.
func renameStorm(t *testing.T, ws, dir string, stop <-chan struct{}) <-chan int {
	t.Helper()
	mustWrite(t, filepath.Join(ws, dir, strings.Repeat("deep/", 30), "f"), "x")
	done := make(chan int, 1)
	go func() {
		cur, n := dir, 0
		defer func() { done <- n }()
		for ; n < stormRenames; n++ {
			select {
			case <-stop:
				return
			default:
			}
			next := dir + "-" + fmt.Sprint(n%2)
			if err := os.Rename(filepath.Join(ws, cur), filepath.Join(ws, next)); err != nil {
				t.Error(err)
				return
			}
			cur = next
		}
	}()
	return done
}

// TestToolCallsProceedDuringARenameStorm: a process renaming a deep tree
// in a loop makes events faster than the watch handles them; the tools'
// changes and the reports, which read the events queued before them, are
// made while it runs, not after it ends.
func TestToolCallsProceedDuringARenameStorm(t *testing.T) {
	a, ws := watchedAgent(t, 1000)
	stop := make(chan struct{})
	renames := renameStorm(t, ws, "storm", stop)
	for i := range 50 {
		if _, werr := a.files.write(wire.WriteArgs{Path: fmt.Sprintf("tool/%d", i), Content: "t"}); werr != nil {
			t.Fatal(werr)
		}
		a.reportChanges(wire.MaxChanges)
	}
	close(stop)
	n := <-renames
	if n >= stormRenames {
		t.Errorf("50 writes and reports waited for the storm's end (%d renames)", n)
	} else {
		t.Logf("50 writes and reports made during %d renames", n)
	}
	// Every directory of the tree is watched under its final name, even
	// those a walk was reading when the tree was renamed.
	report(t, a)
	final := fmt.Sprintf("storm-%d", (n-1)%2)
	a.watch.mu.Lock()
	defer a.watch.mu.Unlock()
	for depth := range 31 {
		d := final + strings.Repeat("/deep", depth)
		if _, ok := a.watch.byPath[d]; !ok {
			t.Fatalf("%s is not watched after the storm: %v", d, slices.Sorted(maps.Keys(a.watch.byPath)))
		}
	}
}

// TestWatchFollowsRenamedDirectories: a directory renamed inside the
// workspace keeps its watches, now under the new names, and its files are
// reported there and its old name as removed; one moved out is watched no
// more, one moved in is watched and read, and one moved over an empty
// directory replaces it.
func TestWatchFollowsRenamedDirectories(t *testing.T) {
	a, ws := watchedAgent(t, 100)
	outside := t.TempDir()
	mustWrite(t, filepath.Join(ws, "a/sub/f"), "x")
	report(t, a)
	watched := func() map[string]int32 {
		a.watch.mu.Lock()
		defer a.watch.mu.Unlock()
		return maps.Clone(a.watch.byPath)
	}
	rename := func(from, to string) {
		t.Helper()
		if err := unix.Rename(from, to); err != nil { // os.Rename refuses to replace a directory
			t.Fatal(err)
		}
	}
	check := func(step string, wantReported map[string]bool, wantWatched ...string) map[string]int32 {
		t.Helper()
		got := report(t, a)
		for p, removed := range wantReported {
			if c, ok := got[p]; !ok || c.Removed != removed {
				t.Errorf("%s: %s reported as %+v (%v), want removed %v", step, p, c, ok, removed)
			}
		}
		if len(got) != len(wantReported) {
			t.Errorf("%s: reported %v, want %v", step, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(wantReported)))
		}
		w := watched()
		if !slices.Equal(slices.Sorted(maps.Keys(w)), append([]string{""}, wantWatched...)) {
			t.Errorf("%s: watched %v, want the workspace and %v", step, slices.Sorted(maps.Keys(w)), wantWatched)
		}
		return w
	}
	before := watched()
	rename(filepath.Join(ws, "a"), filepath.Join(ws, "b"))
	after := check("a renamed b", map[string]bool{"a": true, "b/sub/f": false}, "b", "b/sub")
	if after["b"] != before["a"] || after["b/sub"] != before["a/sub"] {
		t.Errorf("the renamed directories were watched again (%v before, %v after), not followed", before, after)
	}
	rename(filepath.Join(ws, "b"), filepath.Join(outside, "b"))
	check("b moved out", map[string]bool{"b": true})
	rename(filepath.Join(outside, "b"), filepath.Join(ws, "c"))
	check("moved in as c", map[string]bool{"c/sub/f": false}, "c", "c/sub")
	if err := os.Mkdir(filepath.Join(ws, "e"), 0o755); err != nil {
		t.Fatal(err)
	}
	check("e made", map[string]bool{}, "c", "c/sub", "e")
	rename(filepath.Join(ws, "c"), filepath.Join(ws, "e"))
	check("c moved over e", map[string]bool{"c": true, "e/sub/f": false}, "e", "e/sub")
	mustWrite(t, filepath.Join(ws, "e/sub/g"), "y")
	check("a file written in e/sub", map[string]bool{"e/sub/g": false}, "e", "e/sub")
	// A directory made in one that is renamed before the events are read.
	a.watch.mu.Lock()
	if err := os.Mkdir(filepath.Join(ws, "e/new"), 0o755); err != nil {
		t.Fatal(err)
	}
	rename(filepath.Join(ws, "e"), filepath.Join(ws, "h"))
	a.watch.mu.Unlock()
	check("e/new made, e renamed h", map[string]bool{"e": true, "h/sub/f": false, "h/sub/g": false}, "h", "h/new", "h/sub")
	mustWrite(t, filepath.Join(ws, "h/new/later"), "z")
	check("a file written in h/new", map[string]bool{"h/new/later": false}, "h", "h/new", "h/sub")
}
