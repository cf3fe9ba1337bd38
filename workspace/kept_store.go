package workspace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/engine"
)

// The checkpoints of a kept workspace its engine holds (kept_engine.go)
// live in a directory every server of that engine shares
// (Config.CheckpointDir, --checkpoint-dir: in a cluster, a volume mounted
// into every replica and into no workspace Pod), under the workspace's
// store key (engine.Held.StoreKey): another server, or this one started
// again, finds them there, and they stay when the session ends.
//
// The engine's lease makes one server at a time the workspace's holder.
// A lock on a file of the store makes sure of it for the store itself: a
// server whose lease ran out while it still runs (a paused process, a
// partition from the API server) keeps the lock until its session ends,
// so a second server cannot write the store beside it; the kernel drops
// the lock of a killed process at once.

// Layout of Config.CheckpointDir.
const (
	// keptStoresDir holds one store per kept workspace, named by its key.
	keptStoresDir = "kept"
	// storeLockFile is the file of a store whose lock its writer holds.
	storeLockFile = "owner.lock"
	// defaultCheckpointDir is CheckpointDir's default under CacheDir.
	defaultCheckpointDir = "checkpoints"
)

// keptStoreWait bounds the wait for a store's lock: its last holder's
// process may still be exiting.
const keptStoreWait = 10 * time.Second

// ErrStoreLocked means another process holds a kept workspace's
// checkpoint store.
var ErrStoreLocked = errors.New("the kept workspace's checkpoint store is locked by another process")

// CheckpointDirOf is where the checkpoints of the kept workspaces an
// engine holds live: dir, else the default under cacheDir.
func CheckpointDirOf(dir, cacheDir string) string {
	if dir != "" {
		return dir
	}
	return filepath.Join(cacheDir, defaultCheckpointDir)
}

// KeptStoreDir is the store of the kept workspace with the store key key
// under the checkpoint directory dir, or why the key cannot name one.
func KeptStoreDir(dir, key string) (string, error) {
	if key == "" || key == "." || key == ".." || strings.ContainsAny(key, `/\`) {
		return "", fmt.Errorf("the kept workspace's store key %q is not a single path element", key)
	}
	return filepath.Join(dir, keptStoresDir, key), nil
}

// keptStoreOf is the store of the kept workspace held under cfg's
// checkpoint directory.
func keptStoreOf(cfg *Config, held *engine.Held) (string, error) {
	return KeptStoreDir(CheckpointDirOf(cfg.CheckpointDir, cfg.CacheDir), held.StoreKey)
}

// lockKeptStore makes the store dir when missing and takes its lock,
// waiting up to wait for another holder to let it go. The lock lasts
// until the returned file is closed.
func lockKeptStore(dir, name string, wait time.Duration) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the checkpoint store of kept workspace %q: %w", name, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, storeLockFile), os.O_CREATE|os.O_RDWR|noFollow, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the lock of the checkpoint store of kept workspace %q: %w", name, err)
	}
	deadline := time.Now().Add(wait)
	for {
		err := tryLock(f)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, errLocked) || time.Now().After(deadline) {
			f.Close()
			if errors.Is(err, errLocked) {
				return nil, fmt.Errorf("%w: kept workspace %q, store %s: a server that held it still runs (its lease ran out?); "+
					"end that server's session or stop it, then open the workspace again", ErrStoreLocked, name, dir)
			}
			return nil, fmt.Errorf("locking the checkpoint store of kept workspace %q: %w", name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// awaitKeptStore waits up to keptStoreWait for the store of the kept
// workspace held to be free; its caller holds no lock (the session's
// lockKeptStore, under the manager's lock, does not wait). What goes
// wrong here, that call says.
func awaitKeptStore(cfg *Config, held *engine.Held, name string) {
	dir, err := keptStoreOf(cfg, held)
	if err != nil {
		return
	}
	if f, err := lockKeptStore(dir, name, keptStoreWait); err == nil {
		f.Close()
	}
}

// KeptCheckpoints lists, without changing anything, the checkpoints of
// the kept workspace with the store key key under the checkpoint
// directory dir, oldest first, and what its store takes on the disk;
// none when it has no store.
func KeptCheckpoints(dir, key string) ([]Checkpoint, int64, error) {
	store, err := KeptStoreDir(dir, key)
	if err != nil {
		return nil, 0, err
	}
	if _, err := os.Stat(store); errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	list, err := checkpoints.Look(store).List()
	return list, treeBytes(store), err
}

// RemoveKeptStore deletes the checkpoint store of the kept workspace with
// the store key key under the checkpoint directory dir. It refuses one
// another process holds.
func RemoveKeptStore(dir, key, name string) error {
	store, err := KeptStoreDir(dir, key)
	if err != nil {
		return err
	}
	if _, err := os.Stat(store); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(store, storeLockFile), os.O_RDWR|noFollow, 0)
	if err == nil {
		defer f.Close()
		if err := tryLock(f); err != nil {
			return fmt.Errorf("%w: kept workspace %q, store %s; end the session that has it open first", ErrStoreLocked, name, store)
		}
	}
	if err := removeAll(store); err != nil {
		return fmt.Errorf("deleting the checkpoints of kept workspace %q: %w", name, err)
	}
	return nil
}
