package workspace

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/wink-mcp/wink-mcp/workspace/disk"
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
