package workspace

import (
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/wire"
)

// TestDiskFullNoteSaysWhatTakesItAndWhatFreesIt renders every kind of
// full disk a command can leave: what it names, and the call it gives.
func TestDiskFullNoteSaysWhatTakesItAndWhatFreesIt(t *testing.T) {
	const mib = 1 << 20
	full := wire.DiskSpace{TotalBytes: 64 * mib, FreeBytes: 400 << 10, FreeFiles: 9000, TotalFiles: 16384,
		Top: []wire.SpaceUse{{Path: "/workspace/big", Bytes: 60 * mib, Entries: 1}, {Path: "/workspace/src", Bytes: mib, Entries: 40}}}
	noInodes := wire.DiskSpace{TotalBytes: 64 * mib, FreeBytes: 50 * mib, FreeFiles: 0, TotalFiles: 16384,
		Top: []wire.SpaceUse{{Path: "/workspace/many\x1b[2J", Bytes: mib, Entries: 16370}}}
	kept := full
	kept.Outputs, kept.KeptBytes = []wire.KeptOutput{{ID: "ab12-3", Bytes: 30 * mib}}, 30*mib
	tmp := wire.DiskSpace{TotalBytes: 256 * mib, FreeBytes: 0, FreeFiles: 1000, TotalFiles: 2000,
		Top: []wire.SpaceUse{{Path: "/tmp/fill", Bytes: 256 * mib, Entries: 1}}}
	roomy := wire.DiskSpace{TotalBytes: 64 * mib, FreeBytes: 30 * mib, FreeFiles: 9000, TotalFiles: 16384}
	tests := []struct {
		name      string
		report    *wire.DiskFull
		want, not []string
	}{
		{"none", nil, nil, nil},
		{"workspace full", &wire.DiskFull{Workspace: full, WorkspaceFull: true},
			[]string{"64.0 MiB has 400.0 KiB free", "largest entries in /workspace: big (60.0 MiB), src (1.0 MiB)", "rm path=big"}, []string{"/tmp", "job action=forget"}},
		{"workspace full of kept output", &wire.DiskFull{Workspace: kept, WorkspaceFull: true},
			[]string{"kept output of finished jobs takes 30.0 MiB", "job action=forget id=ab12-3", "rm path=big"}, nil},
		{"no inode left", &wire.DiskFull{Workspace: noInodes, WorkspaceFull: true},
			[]string{"no more files", "16384 inodes", `"many\x1b[2J" (16370 files and directories)`, "Free inodes", `rm path="many\x1b[2J"`}, []string{"\x1b"}},
		{"tmp full", &wire.DiskFull{Workspace: roomy, Tmp: &tmp, TmpFull: true},
			[]string{"/tmp, a filesystem of 256.0 MiB of its own, has 0 B free", "/tmp/fill (256.0 MiB)", "podman_shell"}, []string{"workspace's disk"}},
		{"freed since the job ended", &wire.DiskFull{Workspace: roomy, WorkspaceFull: true},
			[]string{"was full when the job ended; it has 30.0 MiB free now"}, []string{"rm"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			note := DiskFullNote(tt.report, "the job")
			if tt.report == nil && note != "" {
				t.Fatalf("no report gives %q", note)
			}
			for _, w := range tt.want {
				if !strings.Contains(note, w) {
					t.Errorf("the note lacks %q:\n%s", w, note)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(note, n) {
					t.Errorf("the note has %q:\n%s", n, note)
				}
			}
		})
	}
}
