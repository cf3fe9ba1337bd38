package checkpoint

import (
	"testing"

	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/wire"
	"github.com/wink-mcp/wink-mcp/workspace/capture"
)

// TestPlanSpaceCountsEveryStep counts what a plan takes from a disk of
// 1 KiB blocks, written beside the files it replaces and with them
// removed first, and checks the fit against the free space and inodes.
func TestPlanSpaceCountsEveryStep(t *testing.T) {
	file := func(p string, size int64) wire.ScanEntry {
		return wire.ScanEntry{Path: wire.NameOf(p), Kind: wire.KindFile, Mode: 0o644, Size: size}
	}
	current := []wire.ScanEntry{file("gone", 10_000), file("kept", 100), file("replaced", 5_000),
		{Path: wire.NameOf("olddir"), Kind: wire.KindDirectory, Mode: 0o755}, file("olddir/in", 2_000)}
	entry := func(p, kind string, size int64, hash string) treeEntry {
		return treeEntry{path: p, Entry: checkpoints.Entry{Name: p, Kind: kind, Mode: 0o644, Size: size, Hash: hash}}
	}
	target := []treeEntry{entry("kept", checkpoints.KindFile, 100, "k"), entry("new", checkpoints.KindFile, 3_000, "n"),
		entry("newdir", checkpoints.KindDir, 0, "d"), entry("replaced", checkpoints.KindFile, 8_000, "r")}
	target[2].Mode = 0o755
	idx := checkpoints.Index{"kept": {Stat: capture.StatOf(current[1]), Hash: "k"}}
	for _, tc := range []struct {
		name           string
		removeReplaced bool
		want           planSpace
		removes        int
	}{
		// gone (10 KiB), olddir (1) and olddir/in (2) go first: -13 KiB;
		// new +3; newdir +1; replaced +8 (peak -1), then its old 5 go.
		{"written beside", false, planSpace{Peak: 0, Final: -6144, Entries: -1}, 2},
		// replaced's 5 KiB go with the rest: -18 KiB, then +3 +1 +8.
		{"replaced files removed first", true, planSpace{Peak: 0, Final: -6144, Entries: -1}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := planRestore(current, target, idx, tc.removeReplaced)
			removes := 0
			for _, st := range p.steps {
				if st.Step == wire.StepRemove {
					removes++
				}
			}
			if got := p.space(current, 1024); got != tc.want || removes != tc.removes {
				t.Errorf("space = %+v with %d removals, want %+v with %d", got, removes, tc.want, tc.removes)
			}
			if p.counts.Written != 3 || p.counts.Unchanged != 1 || p.counts.Removed != 2 {
				t.Errorf("counts = %+v", p.counts)
			}
		})
	}
	// Written beside, a large replaced file needs its old and new content at once.
	big := []wire.ScanEntry{file("f", 40<<10)}
	bigTarget := []treeEntry{entry("f", checkpoints.KindFile, 50<<10, "f")}
	beside := planRestore(big, bigTarget, nil, false).space(big, 1024)
	first := planRestore(big, bigTarget, nil, true).space(big, 1024)
	if beside.Peak != 50<<10 || first.Peak != 10<<10 || beside.Final != first.Final {
		t.Errorf("peak written beside %d, removed first %d; finals %d and %d", beside.Peak, first.Peak, beside.Final, first.Final)
	}
	disk := wire.DiskSpace{FreeBytes: 45 << 10, BlockSize: 1024, TotalFiles: 100, FreeFiles: 40}
	if !first.fits(disk) || beside.fits(disk) {
		t.Errorf("with 45 KiB free: removed first fits %v (want true), written beside %v (want false)", first.fits(disk), beside.fits(disk))
	}
	if disk.FreeFiles = 0; first.fits(disk) {
		t.Error("a plan fits a disk without the inodes it needs")
	}
}
