package workspace

import (
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
}

// FindSessions lists the session directories under cacheDir that have
// mounts, newest first: those of running servers, and those kept with
// KeepSessionDirs. The disks of kept sessions are mounted read-only to be
// read; the caller must call release when done with the records.
func FindSessions(cacheDir string) (records []SessionRecord, release func(), err error) {
	mounted := mountKeptDisks(cacheDir)
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

// ExportMount writes the changes the session in sessionDir made to one of
// its mounts as a git patch that `git apply` accepts in a clean copy of the
// host folder, and returns how many paths changed.
func ExportMount(sessionDir string, mi MountInfo, w io.Writer) (int, error) {
	folder, err := openFolder(sessionDir, mi)
	if err != nil || folder == nil {
		return 0, err
	}
	defer folder.Close()
	list, err := folder.Changes()
	if err != nil {
		return 0, err
	}
	return len(list), folder.WritePatch(w, list, changes.PatchOptions{TextLimit: exportTextLimit, Binary: true})
}

// ExportChanges writes a patch of each changed mount of the session to
// <dir>/<workspace path>.patch, each written whole or not at all, and
// returns the files written.
func ExportChanges(sessionDir string, mounts []MountInfo, dir string) ([]string, error) {
	var written []string
	var errs []error
	for _, mi := range mounts {
		if mi.Mode == MountReadOnly {
			continue
		}
		dst := filepath.Join(dir, filepath.FromSlash(mi.Path)+".patch")
		n, err := writeAtomically(dst, func(w io.Writer) (int, error) { return ExportMount(sessionDir, mi, w) })
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("exporting the changes to %s: %w", mi.HostPath, err))
		case n > 0:
			written = append(written, dst)
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
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".export-*")
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
// each patch written; the session directory is deleted after it.
func (s *Session) exportOnEnd(ended time.Time) {
	dir := filepath.Join(s.m.cfg.ExportDir, exportDirName(s.hash, ended))
	written, err := ExportChanges(s.dir, s.infoLocked().Mounts, dir)
	for _, p := range written {
		s.m.log.Info("exported the session's changes", "session", s.hash, "patch", p)
	}
	if err != nil {
		s.m.log.Error("exporting the session's changes failed", "session", s.hash, "err", err)
	} else if len(written) == 0 {
		s.m.log.Info("the session changed no mounted folder; nothing exported", "session", s.hash)
	}
}
