package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/wink-mcp/wink-mcp/changes"
	"github.com/wink-mcp/wink-mcp/workspace/disk"
	"github.com/wink-mcp/wink-mcp/workspace/mounts"
)

// SessionRecord is a session directory found under a cache directory.
type SessionRecord struct {
	// Dir is the session directory.
	Dir string
	// Hash names the session, as the logs do (the name of Dir, which may
	// differ for a session given a pooled container, names it too).
	Hash string
	// Workspace names the kept workspace the record is, "" for a session
	// directory (see OpenKept).
	Workspace string
	// Alive is true while the server that owns it runs.
	Alive bool
	// Mounts are the host folders in its workspace.
	Mounts []MountInfo
	// Modified is when its mounts were last set up.
	Modified time.Time
	// Err says why a kept session cannot be read; it has no Mounts then.
	Err error
}

// FindSessions lists the session directories under cacheDir that have
// mounts, newest first: those of running servers, those kept with
// KeepSessionDirs or for their export, and the handed-over workspaces
// whose changes wait to be exported (Hash is the workspace's name). The
// disks of kept sessions are mounted read-only to be read; the caller
// must call release when done with the records. A kept session whose
// disk cannot be mounted is listed last, with Err set.
func FindSessions(cacheDir string) (records []SessionRecord, release func(), err error) {
	mounted, failed := mountKeptDisks(cacheDir)
	release = func() {
		for _, dir := range mounted {
			_ = disk.Unmount(dir)
		}
	}
	records, err = findSessions(cacheDir)
	if err != nil {
		release()
		return nil, func() {}, err
	}
	for dir, err := range failed {
		name, image := sessionImage(dir)
		r := SessionRecord{Dir: dir, Hash: name, Err: err}
		if info, statErr := os.Stat(image); statErr == nil {
			r.Modified = info.ModTime()
		}
		records = append(records, r)
	}
	return records, release, nil
}

func findSessions(cacheDir string) ([]SessionRecord, error) {
	manifests, err := filepath.Glob(filepath.Join(cacheDir, instancesDir, "*", sessionsDir, "*", mountsManifest))
	if err != nil {
		return nil, err
	}
	for dir := range exportableKept(cacheDir) {
		manifests = append(manifests, filepath.Join(dir, mountsManifest))
	}
	var out []SessionRecord
	for _, mf := range manifests {
		dir := filepath.Dir(mf)
		m, err := readManifest(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue // its session ended since the listing, or a handed-over workspace whose mounts were never used
		}
		if err != nil {
			return nil, err
		}
		info, err := os.Stat(mf)
		if err != nil {
			continue
		}
		lock := filepath.Join(filepath.Dir(filepath.Dir(dir)), lockFile) // its instance's
		if isKeptSessionDir(dir) {
			lock = filepath.Join(filepath.Dir(dir), lockFile) // its workspace's
		}
		alive, _ := probeLock(lock)
		hash := m.Session
		if name, _ := sessionImage(dir); hash == "" || isKeptSessionDir(dir) {
			hash = name
		}
		out = append(out, SessionRecord{Dir: dir, Hash: hash, Alive: alive, Mounts: m.Mounts, Modified: info.ModTime()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Modified.After(out[j].Modified) })
	return out, nil
}

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
func ExportMount(ctx context.Context, sessionDir string, mi MountInfo, w io.Writer) (Export, error) {
	folder, list, err := mountChanges(ctx, sessionDir, mi)
	if err != nil || folder == nil {
		return Export{}, err
	}
	defer folder.Close()
	return writeExport(ctx, folder, list, w)
}

// mountChanges opens a mount's folder and lists its changes; the folder is
// nil when the mount cannot have changed. The caller closes it.
func mountChanges(ctx context.Context, sessionDir string, mi MountInfo) (*changes.Folder, []changes.Change, error) {
	folder, err := mounts.OpenFolder(sessionDir, mi)
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
func ExportChanges(ctx context.Context, sessionDir string, mounts []MountInfo, dir string) ([]ExportedPatch, error) {
	var written []ExportedPatch
	var errs []error
	for _, mi := range mounts {
		if mi.Mode == MountReadOnly {
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
func exportOne(ctx context.Context, sessionDir string, mi MountInfo, dst string) (ExportedPatch, error) {
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
	err = writeDurably(dst, func(w io.Writer) error {
		var err error
		ex, err = writeExport(ctx, folder, list, w)
		return err
	})
	return ExportedPatch{Export: ex, Path: dst}, err
}

// writeDurably writes dst whole or not at all, through a temporary file
// beside it, and syncs the file and every directory it changed or made, so
// that the patch is on disk before what depends on it (the session's
// files) is deleted. Directories it made are removed when the write fails.
func writeDurably(dst string, write func(io.Writer) error) error {
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

// writeAtomically writes a file through a temporary one, keeping it only
// when write succeeds and reports something written.
func writeAtomically(dst string, write func(io.Writer) (int, error)) (int, error) {
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return 0, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+"-*")
	if err != nil {
		return 0, err
	}
	n, err := write(tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil || n == 0 {
		os.Remove(tmp.Name())
		return 0, err
	}
	return n, os.Rename(tmp.Name(), dst)
}

// exportDirName names a session's folder under Config.ExportDir: when it
// ended, then its hash, so folders sort by time.
func exportDirName(hash string, ended time.Time) string {
	return ended.UTC().Format("20060102T150405Z") + "-" + hash
}
