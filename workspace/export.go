package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/wink-mcp/wink-mcp/changes"
)

// SessionRecord is a session directory found under a cache directory.
type SessionRecord struct {
	// Dir is the session directory.
	Dir string
	// Hash names the session, as the logs do.
	Hash string
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
// mounts, newest first: those of running servers, and those kept with
// KeepSessionDirs. The disks of kept sessions are mounted read-only to be
// read; the caller must call release when done with the records. A kept
// session whose disk cannot be mounted is listed last, with Err set.
func FindSessions(cacheDir string) (records []SessionRecord, release func(), err error) {
	mounted, failed := mountKeptDisks(cacheDir)
	release = func() {
		for _, dir := range mounted {
			_ = unmountDisk(dir)
		}
	}
	records, err = findSessions(cacheDir)
	if err != nil {
		release()
		return nil, func() {}, err
	}
	for dir, err := range failed {
		r := SessionRecord{Dir: dir, Hash: filepath.Base(dir), Err: err}
		image := filepath.Join(filepath.Dir(filepath.Dir(dir)), disksDir, r.Hash+".img")
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
	var out []SessionRecord
	for _, mf := range manifests {
		dir := filepath.Dir(mf)
		mounts, err := ReadManifest(dir)
		if err != nil {
			return nil, err
		}
		info, err := os.Stat(mf)
		if err != nil {
			return nil, err
		}
		instanceDir := filepath.Dir(filepath.Dir(dir))
		alive, _ := probeLock(filepath.Join(instanceDir, lockFile))
		out = append(out, SessionRecord{Dir: dir, Hash: filepath.Base(dir), Alive: alive, Mounts: mounts, Modified: info.ModTime()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Modified.After(out[j].Modified) })
	return out, nil
}

// Export is what one mount's patch holds.
type Export struct {
	// Changed counts the paths that changed.
	Changed int
	// LeftOut names the changes the patch does not hold, and why.
	LeftOut []string
}

// ExportMount writes the changes the session in sessionDir made to one of
// its mounts as a git patch that `git apply` accepts in a clean copy of the
// host folder. It stops when ctx is done.
func ExportMount(ctx context.Context, sessionDir string, mi MountInfo, w io.Writer) (Export, error) {
	folder, err := openFolder(sessionDir, mi)
	if err != nil || folder == nil {
		return Export{}, err
	}
	defer folder.Close()
	list, err := folder.Changes(ctx)
	if err != nil {
		return Export{}, err
	}
	left, err := folder.WritePatch(ctx, w, list, changes.PatchOptions{TextLimit: exportTextLimit, Binary: true})
	return Export{Changed: len(list), LeftOut: left}, err
}

// ExportedPatch is a patch file ExportChanges wrote.
type ExportedPatch struct {
	Export
	// Path is the patch file.
	Path string
}

// ExportChanges writes a patch of each changed mount of the session to
// <dir>/<workspace path>.patch, each written whole or not at all (a patch
// cut short by ctx leaves no file), and returns the files written.
func ExportChanges(ctx context.Context, sessionDir string, mounts []MountInfo, dir string) ([]ExportedPatch, error) {
	var written []ExportedPatch
	var errs []error
	for _, mi := range mounts {
		if mi.Mode == MountReadOnly {
			continue
		}
		dst := filepath.Join(dir, filepath.FromSlash(mi.Path)+".patch")
		var ex Export
		n, err := writeAtomically(dst, func(w io.Writer) (int, error) {
			var err error
			ex, err = ExportMount(ctx, sessionDir, mi, w)
			return ex.Changed, err
		})
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("exporting the changes to %s: %w", mi.HostPath, err))
		case n > 0:
			written = append(written, ExportedPatch{Export: ex, Path: dst})
		}
	}
	return written, errors.Join(errs...)
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

// exportOnEnd writes the session's changes under Config.ExportDir, logging
// each patch written and what it left out; the session directory is
// deleted after it. ctx bounds it (the shutdown timeout): a patch that
// cannot finish in time is not written, and the log says so.
func (s *Session) exportOnEnd(ctx context.Context, ended time.Time) {
	dir := filepath.Join(s.m.cfg.ExportDir, exportDirName(s.hash, ended))
	written, err := ExportChanges(ctx, s.dir, s.infoLocked().Mounts, dir)
	for _, p := range written {
		s.m.log.Info("exported the session's changes", "session", s.hash, "patch", p.Path, "changed", p.Changed, "left_out", len(p.LeftOut))
		for _, line := range p.LeftOut {
			s.m.log.Warn("left out of the exported patch", "session", s.hash, "patch", p.Path, "entry", line)
		}
	}
	if err != nil {
		s.m.log.Error("exporting the session's changes failed", "session", s.hash, "err", err)
	} else if len(written) == 0 {
		s.m.log.Info("the session changed no mounted folder; nothing exported", "session", s.hash)
	}
}
