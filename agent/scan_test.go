//go:build linux

package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/wire"
)

// TestScanPagesJoinIntoTheWholeWalk scans a tree a few entries a page and
// checks the pages join into the walk of one page, in walk order, with
// the skipped subtree left out and no link followed out of the workspace.
func TestScanPagesJoinIntoTheWholeWalk(t *testing.T) {
	c, ws := startAgent(t)
	outside := outsideDir(t)
	for _, p := range []string{"a/x", "a/b/y", "a.txt", "b/c/d/e", "ro/secret", "z", "a-b/q", "\xffodd"} {
		mustWrite(t, filepath.Join(ws, p), "content of "+p)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "a", "out")); err != nil {
		t.Fatal(err)
	}
	whole, err := do[wire.ScanResult](t, c, wire.OpScan, wire.ScanArgs{Skip: []string{"ro"}})
	if err != nil || whole.More {
		t.Fatalf("scan = %+v, %v", whole, err)
	}
	var paths []string
	for _, e := range whole.Entries {
		paths = append(paths, e.Path.String())
	}
	want := []string{"a", "a/b", "a/b/y", "a/out", "a/x", "a-b", "a-b/q", "a.txt", "b", "b/c", "b/c/d", "b/c/d/e", "z", "\xffodd"}
	if !slices.Equal(paths, want) {
		t.Fatalf("walk = %q\nwant   %q", paths, want)
	}
	for _, e := range whole.Entries {
		if e.Path.String() == "a/out" && (e.Kind != wire.KindSymlink || e.Target.String() != outside) {
			t.Errorf("the link = %+v", e)
		}
		if strings.Contains(e.Path.String(), "canary") {
			t.Errorf("the scan went through the link: %s", e.Path.String())
		}
	}
	for _, limit := range []int{1, 2, 3, 5} {
		var joined []string
		args := wire.ScanArgs{Skip: []string{"ro"}, Limit: limit}
		for {
			page, err := do[wire.ScanResult](t, c, wire.OpScan, args)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range page.Entries {
				joined = append(joined, e.Path.String())
			}
			if !page.More {
				break
			}
			args.After = page.Entries[len(page.Entries)-1].Path
		}
		if !slices.Equal(joined, want) {
			t.Errorf("pages of %d = %q", limit, joined)
		}
	}
}

// TestApplyNeverLeavesTheWorkspace sends steps whose paths climb out or
// go through a link out; each fails and nothing outside changes.
func TestApplyNeverLeavesTheWorkspace(t *testing.T) {
	c, ws := startAgent(t)
	outside := outsideDir(t)
	if err := os.Symlink(outside, filepath.Join(ws, "out")); err != nil {
		t.Fatal(err)
	}
	target := wire.NameOf("/etc/passwd")
	for _, st := range []wire.ApplyStep{
		{Step: wire.StepWrite, Path: wire.NameOf("../escaped"), Data: []byte("x"), Upload: "0123456789abcdef", Final: true, Mode: 0o644},
		{Step: wire.StepWrite, Path: wire.NameOf("out/canary.txt"), Data: []byte("x"), Upload: "0123456789abcdef", Final: true, Mode: 0o644},
		{Step: wire.StepRemove, Path: wire.NameOf("out/canary.txt")},
		{Step: wire.StepMkdir, Path: wire.NameOf("out/dir"), Mode: 0o755},
		{Step: wire.StepChmod, Path: wire.NameOf("out/canary.txt"), Mode: 0o777},
		{Step: wire.StepSymlink, Path: wire.NameOf("out/link"), Target: &target},
		{Step: wire.StepFifo, Path: wire.NameOf("out/fifo"), Mode: 0o644},
		{Step: wire.StepWrite, Path: wire.NameOf("f"), Upload: "../../x", Final: true},
	} {
		if _, err := do[wire.ApplyResult](t, c, wire.OpApply, wire.ApplyArgs{Steps: []wire.ApplyStep{st}}); err == nil {
			t.Errorf("step %s %q succeeded", st.Step, st.Path.String())
		}
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 1 || readHost(t, filepath.Join(outside, "canary.txt")) != "canary-token" {
		t.Errorf("outside changed: %d entries", len(entries))
	}
	if info, _ := os.Stat(filepath.Join(outside, "canary.txt")); info.Mode().Perm() != 0o644 {
		t.Errorf("outside file's mode = %v", info.Mode())
	}
	if _, err := os.Lstat(filepath.Join(filepath.Dir(ws), "escaped")); err == nil {
		t.Error("a write climbed out of the workspace")
	}
	// Removing the link removes the link, never what it points at.
	if _, err := do[wire.ApplyResult](t, c, wire.OpApply, wire.ApplyArgs{Steps: []wire.ApplyStep{{Step: wire.StepRemove, Path: wire.NameOf("out")}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(outside, "canary.txt")); err != nil {
		t.Errorf("removing the link removed its target: %v", err)
	}
}

func TestReadFilesRefusesSpecialFilesAndLinks(t *testing.T) {
	c, ws := startAgent(t)
	outside := outsideDir(t)
	os.Symlink(filepath.Join(outside, "canary.txt"), filepath.Join(ws, "link"))
	mustWrite(t, filepath.Join(ws, "f"), "0123456789")
	res, err := do[wire.ReadFilesResult](t, c, wire.OpReadFiles, wire.ReadFilesArgs{Files: []wire.FileRange{
		{Path: wire.NameOf("link"), Limit: 100},
		{Path: wire.NameOf("f"), Offset: 3, Limit: 4},
		{Path: wire.NameOf("missing"), Limit: 1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Files[0].Error == "" || strings.Contains(string(res.Files[0].Data), "canary") {
		t.Errorf("a link was read: %+v", res.Files[0])
	}
	if string(res.Files[1].Data) != "3456" || res.Files[1].Size != 10 {
		t.Errorf("range = %+v", res.Files[1])
	}
	if res.Files[2].Error == "" {
		t.Error("a missing file read without error")
	}
	if _, err := do[wire.ReadFilesResult](t, c, wire.OpReadFiles, wire.ReadFilesArgs{Files: []wire.FileRange{{Path: wire.NameOf("f"), Limit: wire.MaxChunkBytes + 1}}}); err == nil {
		t.Error("a read past the chunk limit was accepted")
	}
}
