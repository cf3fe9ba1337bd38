package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/wink-mcp/wink-mcp/workspace/disk"
)

// OpenKept makes the files of the kept workspace name readable for an
// export and describes it as a session record (Workspace set; no Mounts
// when it mounts no host folder). A workspace no session has open is
// locked meanwhile, so that no session opens it while its disk is mounted
// read-only to be read; one a session has open is read as that session
// has it (Alive). The caller must call release when done with the record.
func OpenKept(cacheDir, name string) (rec SessionRecord, release func(), err error) {
	if err := CheckWorkspaceName(name); err != nil {
		return SessionRecord{}, nil, err
	}
	root := keptRoot(cacheDir, name)
	if _, err := os.Stat(root); err != nil {
		return SessionRecord{}, nil, fmt.Errorf("no kept workspace %q under %s", name, cacheDir)
	}
	k := &keptWorkspace{name: name, root: root}
	rec = SessionRecord{Dir: k.sessionDir(), Hash: name, Workspace: name}
	if info, err := os.Stat(filepath.Join(root, recordFile)); err == nil {
		rec.Modified = info.ModTime()
	}
	lock, err := os.OpenFile(filepath.Join(root, lockFile), os.O_CREATE|os.O_RDWR|noFollow, 0o600)
	if err != nil {
		return SessionRecord{}, nil, fmt.Errorf("opening the lock of workspace %s: %w", name, err)
	}
	release = func() { lock.Close() }
	switch err := tryLock(lock); {
	case errors.Is(err, errLocked):
		rec.Alive = true // its owner has its disk mounted
	case err != nil:
		lock.Close()
		return SessionRecord{}, nil, fmt.Errorf("locking workspace %s: %w", name, err)
	default:
		unmount, err := disk.MountForExport(k.diskImage(), k.sessionDir())
		if err != nil {
			rec.Err = err
			return rec, release, nil
		}
		release = func() { unmount(); lock.Close() }
	}
	rec.Mounts, err = ReadManifest(k.sessionDir())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		rec.Err = err
	}
	return rec, release, nil
}

// FindKept opens, as OpenKept does, every kept workspace under cacheDir
// that mounts host folders (or cannot be read), most recently used first.
// The caller must call release when done with the records.
func FindKept(cacheDir string) (records []SessionRecord, release func(), err error) {
	list, err := ListKept(cacheDir)
	if err != nil {
		return nil, func() {}, err
	}
	var releases []func()
	release = func() {
		for _, r := range releases {
			r()
		}
	}
	for _, k := range list {
		rec, rel, err := OpenKept(cacheDir, k.Name)
		if err != nil {
			continue // removed since the listing
		}
		if len(rec.Mounts) == 0 && rec.Err == nil {
			rel()
			continue
		}
		releases = append(releases, rel)
		records = append(records, rec)
	}
	return records, release, nil
}
