package workspace

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Layout of the cache directory:
//
//	<cache>/instances/<id>/lock                    held locked while instance <id> runs
//	<cache>/instances/<id>/keep                    present when its session directories are kept
//	<cache>/instances/<id>/sessions/<hash>/workspace   mounted at /workspace
//	<cache>/instances/<id>/stores/<hash>           the session's checkpoints
const (
	instancesDir = "instances"
	lockFile     = "lock"
	keepMarker   = "keep"
	sessionsDir  = "sessions"
	storesDir    = "stores"
)

// instance is this server process's identity on the host: a random ID, the
// secret its session hashes are keyed with, and a lock file it holds for as
// long as it runs. The kernel drops the lock when the process dies, however
// it dies, which is how another wink-mcp tells a live owner from a dead one.
type instance struct {
	id       string
	secret   []byte
	host     string
	dir      string
	lockPath string
	lock     *os.File
}

// newInstance creates this instance's directory under cacheDir and takes its lock.
func newInstance(cacheDir string, keep bool) (*instance, error) {
	var raw [8 + 32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, fmt.Errorf("generating instance id: %w", err)
	}
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("reading hostname: %w", err)
	}
	id := hex.EncodeToString(raw[:8])
	dir := filepath.Join(cacheDir, instancesDir, id)
	if err := os.MkdirAll(filepath.Join(dir, sessionsDir), 0o700); err != nil {
		return nil, fmt.Errorf("creating instance directory: %w", err)
	}
	lockPath := filepath.Join(dir, lockFile)
	lock, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("creating instance lock: %w", err)
	}
	if err := tryLock(lock); err != nil {
		lock.Close()
		return nil, fmt.Errorf("locking %s: %w", lockPath, err)
	}
	if keep {
		if err := os.WriteFile(filepath.Join(dir, keepMarker), nil, 0o600); err != nil {
			lock.Close()
			return nil, fmt.Errorf("marking instance directory as kept: %w", err)
		}
	}
	return &instance{id: id, secret: raw[8:], host: host, dir: dir, lockPath: lockPath, lock: lock}, nil
}

// sessionDir is where the files of the session with this hash live.
func (i *instance) sessionDir(hash string) string {
	return filepath.Join(i.dir, sessionsDir, hash)
}

// storeDir is where the checkpoints of the session with this hash live.
func (i *instance) storeDir(hash string) string {
	return filepath.Join(i.dir, storesDir, hash)
}

// release drops the lock; with removeDir it first deletes the instance directory.
func (i *instance) release(removeDir bool) error {
	var err error
	if removeDir {
		err = removeAll(i.dir)
	} else {
		err = os.Remove(i.lockPath)
	}
	return errors.Join(err, i.lock.Close())
}

// probeLock reports whether the instance owning the lock file at path is
// alive, by trying to take the lock. A missing file means a dead instance
// (instances delete their lock only after removing their containers), and
// so does a lock still held by a process that has exited.
func probeLock(path string) (bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|noFollow, 0)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	switch err := tryLock(f); {
	case err == nil:
		return false, nil
	case errors.Is(err, errLocked):
		// A holder that has exited is no owner, though the kernel has not
		// released its lock yet (see exitingHolder).
		return exitingHolder(path) == 0, nil
	default:
		return false, err
	}
}

// deadInstance is the directory of an instance that is no longer running;
// kept when it asked for its files to be kept.
type deadInstance struct {
	dir  string
	kept bool
}

// deadInstanceDirs lists the directories under cacheDir of instances that
// are no longer running.
func deadInstanceDirs(cacheDir string, self *instance) []deadInstance {
	entries, err := os.ReadDir(filepath.Join(cacheDir, instancesDir))
	if err != nil {
		return nil
	}
	var dead []deadInstance
	for _, e := range entries {
		if !e.IsDir() || e.Name() == self.id {
			continue
		}
		dir := filepath.Join(cacheDir, instancesDir, e.Name())
		_, err := os.Lstat(filepath.Join(dir, keepMarker))
		if alive, perr := probeLock(filepath.Join(dir, lockFile)); perr == nil && !alive {
			dead = append(dead, deadInstance{dir: dir, kept: err == nil})
		}
	}
	return dead
}
