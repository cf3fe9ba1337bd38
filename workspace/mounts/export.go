package mounts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/wink-mcp/wink-mcp/changes"
)

// exportTextLimit is the largest file an exported patch holds as text;
// larger ones are binary literals, which reproduce them as well.
const exportTextLimit = 8 << 20

// Export is what one mount's patch holds.
type Export struct {
	// Changed counts the paths that changed, which the patch holds or
	// names; paths left out in bulk (ignored directories, .git) are not
	// counted, only named in LeftOut.
	Changed int
	// LeftOut names the changes the patch does not hold, and why: one
	// line a path, or a directory for paths left out in bulk.
	LeftOut []string
}

// ExportMount writes the changes the session in sessionDir made to one of
// its mounts as a git patch that `git apply` accepts in a clean copy of the
// host folder. It stops when ctx is done.
func ExportMount(ctx context.Context, sessionDir string, mi Info, w io.Writer) (Export, error) {
	folder, list, err := mountChanges(ctx, sessionDir, mi)
	if err != nil || folder == nil {
		return Export{}, err
	}
	defer folder.Close()
	return writeExport(ctx, folder, list, w)
}

// mountChanges opens a mount's folder and lists its changes; the folder is
// nil when the mount cannot have changed. The caller closes it.
func mountChanges(ctx context.Context, sessionDir string, mi Info) (*changes.Folder, []changes.Change, error) {
	folder, err := OpenFolder(sessionDir, mi)
	if err != nil || folder == nil {
		return nil, nil, err
	}
	list, err := folder.Changes(ctx)
	if err != nil {
		folder.Close()
		return nil, nil, err
	}
	return folder, list, nil
}

// writeExport writes the patch of listed changes.
func writeExport(ctx context.Context, folder *changes.Folder, list []changes.Change, w io.Writer) (Export, error) {
	ex := Export{}
	for _, c := range list {
		if c.Group == nil {
			ex.Changed++
		}
	}
	var err error
	ex.LeftOut, err = folder.WritePatch(ctx, w, list, changes.PatchOptions{TextLimit: exportTextLimit, Binary: true})
	return ex, err
}

// ExportedPatch is a patch file ExportChanges wrote.
type ExportedPatch struct {
	Export
	// Path is the patch file; "" when the mount's changes were all left
	// out in bulk (LeftOut names them), which makes no patch.
	Path string
}

// ExportChanges writes a patch of each changed mount of the session to
// <dir>/<workspace path>.patch and returns them. Each patch is written
// whole or not at all (a patch cut short by ctx leaves no file) and is on
// disk, synced, when it returns; a session that changed nothing a patch
// can hold leaves nothing in dir, not even the directory.
func ExportChanges(ctx context.Context, sessionDir string, mounts []Info, dir string) ([]ExportedPatch, error) {
	var written []ExportedPatch
	var errs []error
	for _, mi := range mounts {
		if mi.Mode == ReadOnly {
			continue
		}
		p, err := exportOne(ctx, sessionDir, mi, filepath.Join(dir, filepath.FromSlash(mi.Path)+".patch"))
		if err != nil {
			errs = append(errs, fmt.Errorf("exporting the changes to %s: %w", mi.HostPath, err))
		} else if p.Changed > 0 || len(p.LeftOut) > 0 {
			written = append(written, p)
		}
	}
	return written, errors.Join(errs...)
}

// exportOne writes one mount's patch to dst, if it has changes a patch
// can hold.
func exportOne(ctx context.Context, sessionDir string, mi Info, dst string) (ExportedPatch, error) {
	folder, list, err := mountChanges(ctx, sessionDir, mi)
	if err != nil || folder == nil {
		return ExportedPatch{}, err
	}
	defer folder.Close()
	if !slices.ContainsFunc(list, func(c changes.Change) bool { return c.Group == nil }) {
		ex, err := writeExport(ctx, folder, list, io.Discard) // names what was left out; reads nothing
		return ExportedPatch{Export: ex}, err
	}
	var ex Export
	err = WriteDurably(dst, func(w io.Writer) error {
		var err error
		ex, err = writeExport(ctx, folder, list, w)
		return err
	})
	return ExportedPatch{Export: ex, Path: dst}, err
}

// WriteDurably writes dst whole or not at all, through a temporary file
// beside it, and syncs the file and every directory it changed or made, so
// that the patch is on disk before what depends on it (the session's
// files) is deleted. Directories it made are removed when the write fails.
func WriteDurably(dst string, write func(io.Writer) error) error {
	made, err := mkdirs(filepath.Dir(dst))
	if err != nil {
		return err
	}
	err = func() error {
		tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+"-*")
		if err != nil {
			return err
		}
		err = write(tmp)
		if err == nil {
			err = tmp.Sync()
		}
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), dst)
		}
		if err != nil {
			os.Remove(tmp.Name())
			return err
		}
		dirs := []string{filepath.Dir(dst)}
		for _, d := range made {
			dirs = append(dirs, filepath.Dir(d))
		}
		for _, d := range dirs {
			if err := syncDir(d); err != nil {
				return fmt.Errorf("syncing %s: %w", d, err)
			}
		}
		return nil
	}()
	if err != nil {
		for i := len(made) - 1; i >= 0; i-- {
			os.Remove(made[i]) // only if empty
		}
	}
	return err
}

// mkdirs makes dir and its missing parents, returning those it made,
// outermost first.
func mkdirs(dir string) ([]string, error) {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || d == filepath.Dir(d) {
			break
		}
		missing = append([]string{d}, missing...)
	}
	for i, d := range missing {
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			for j := i - 1; j >= 0; j-- {
				os.Remove(missing[j])
			}
			return nil, err
		}
	}
	return missing, nil
}

// CountChanges counts the changed paths a patch of the session's mounts
// would hold; what a patch leaves out in bulk is not counted.
func CountChanges(ctx context.Context, sessionDir string, mounts []Info) (int, error) {
	n := 0
	for _, mi := range mounts {
		if mi.Mode == ReadOnly {
			continue
		}
		folder, list, err := mountChanges(ctx, sessionDir, mi)
		if err != nil {
			return n, fmt.Errorf("listing the changes to %s: %w", mi.HostPath, err)
		}
		if folder == nil {
			continue
		}
		folder.Close()
		for _, c := range list {
			if c.Group == nil {
				n++
			}
		}
	}
	return n, nil
}
