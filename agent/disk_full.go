//go:build linux

package agent

import (
	"cmp"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/wink-mcp/wink-mcp/wire"
)

// A command that fills the workspace's disk, the temporary directory or
// their inode tables shows only its own "No space left on device". When a
// filesystem it writes to is still full at its end, its result says what
// takes the space and what frees it (wire.DiskFull). The common path pays
// a statfs of each filesystem at a command's end; the rest (the kept
// outputs, the largest entries) is counted only when one is full.

// Bounds of what a full disk's report counts and names.
const (
	// topBudget bounds the entries topUses looks at.
	topBudget = 50_000
	// maxTop bounds the entries a report names.
	maxTop = 5
)

// statDisk is statfs of dir's filesystem, as a user who is not root may
// use it.
func statDisk(dir string) (wire.DiskSpace, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return wire.DiskSpace{}, err
	}
	return wire.DiskSpace{TotalBytes: int64(st.Blocks) * st.Bsize, FreeBytes: int64(st.Bavail) * st.Bsize,
		FreeFiles: int64(st.Ffree), TotalFiles: int64(st.Files), BlockSize: st.Bsize}, nil
}

// sameFilesystem reports whether dirs a and b are on one filesystem.
func sameFilesystem(a, b string) bool {
	var sa, sb unix.Stat_t
	return unix.Stat(a, &sa) == nil && unix.Stat(b, &sb) == nil && sa.Dev == sb.Dev
}

// disks looks at the filesystems commands write to: /workspace's, and the
// temporary directory's when that is another. It holds no state that
// changes, so it is safe for concurrent use.
type disks struct {
	workspace string
	// tmp is the temporary directory commands use; tmpOnWorkspace says it
	// is on /workspace's filesystem.
	tmp            string
	tmpOnWorkspace bool
	// keptOutputs lists the finished jobs' kept outputs on /workspace's
	// disk (see jobs.keptOutputs).
	keptOutputs func() []wire.KeptOutput
}

// fullDisks says which filesystems a command left full.
type fullDisks struct{ workspace, tmp bool }

// fullNow tells which of the filesystems of /workspace and of the
// temporary directory, when that is another, are full.
func (d *disks) fullNow() fullDisks {
	var f fullDisks
	if ws, err := statDisk(d.workspace); err == nil {
		f.workspace = ws.Full()
	}
	if !d.tmpOnWorkspace {
		if tmp, err := statDisk(d.tmp); err == nil {
			f.tmp = tmp.Full()
		}
	}
	return f
}

// report describes the filesystems of /workspace and of the temporary
// directory as they are now, for a command that left those full says
// full; nil when it left none full.
func (d *disks) report(full fullDisks) *wire.DiskFull {
	if !full.workspace && !full.tmp {
		return nil
	}
	ws, werr := d.space()
	if werr != nil {
		return nil
	}
	r := &wire.DiskFull{Workspace: *ws, WorkspaceFull: full.workspace, TmpFull: full.tmp}
	if !d.tmpOnWorkspace {
		if t, err := statDisk(d.tmp); err == nil {
			if t.Full() {
				t.Top, t.TopPartial = topUses(d.tmp, t.NoFreeFiles())
			}
			r.Tmp = &t
		}
	}
	return r
}

// topUses counts what each entry of dir takes, itself and everything
// under it on dir's filesystem, and returns the maxTop that take the most
// bytes (with byEntries, the most files and directories), most first;
// partial says it stopped after topBudget entries.
func topUses(dir string, byEntries bool) (top []wire.SpaceUse, partial bool) {
	var root unix.Stat_t
	entries, err := os.ReadDir(dir)
	if err != nil || unix.Lstat(dir, &root) != nil {
		return nil, false
	}
	budget := topBudget
	for _, e := range entries {
		if budget <= 0 {
			partial = true
			break
		}
		use := wire.SpaceUse{Path: filepath.Join(dir, e.Name())}
		_ = filepath.WalkDir(use.Path, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // gone, or not readable: counted as nothing
			}
			if budget--; budget < 0 {
				partial = true
				return filepath.SkipAll
			}
			var st unix.Stat_t
			if unix.Lstat(path, &st) != nil {
				return nil
			}
			if st.Dev != root.Dev { // a folder mounted from elsewhere takes none of this disk
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			use.Bytes += st.Blocks * 512
			use.Entries++
			return nil
		})
		top = append(top, use)
	}
	key := func(u wire.SpaceUse) int64 {
		if byEntries {
			return u.Entries
		}
		return u.Bytes
	}
	slices.SortFunc(top, func(x, y wire.SpaceUse) int { return cmp.Compare(key(y), key(x)) })
	return top[:min(len(top), maxTop)], partial
}
