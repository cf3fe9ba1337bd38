package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/wink-mcp/wink-mcp/engine"
)

// The checkpoints of a roaming workspace (roaming.go) follow it from
// server to server when the servers share a checkpoint directory
// (Config.CheckpointDir, --checkpoint-dir): they live there in the kept
// workspaces' stores (kept_store.go), under the roaming workspace's name
// (an engine.RoamingName, never a kept workspace's name nor another
// roaming workspace's), locked by the session that holds the workspace.
// A session that leaves the workspace for another server (asked for it,
// handed over, its server closing) leaves the store; one that ends the
// workspace (closed, idle) deletes it; the store of a workspace that
// ended with nobody to delete it (its lease removed by a sweep, its last
// holder killed) is deleted by the sweep of whichever server finds it
// unlocked with no lease (sweepRoamingStores). Without --checkpoint-dir
// each server's checkpoint directory is its own: a roaming workspace's
// checkpoints are then its session's, and go with it.

// roamingStoresShared reports whether the roaming workspaces'
// checkpoints are in a directory the servers share.
func roamingStoresShared(cfg *Config) bool { return cfg.CheckpointDir != "" }

// errRoamingCheckpointsStay refuses to hand over a roaming workspace with
// checkpoints that would stay behind.
var errRoamingCheckpointsStay = errors.New("this workspace has checkpoints, which stay in this server's cache while the workspace may go to any replica " +
	"(the replicas share no --checkpoint-dir): restore or delete them (workspace_checkpoint_delete) before handing it over, " +
	"keep the workspace (workspace_open with `name`), or start the replicas with a shared --checkpoint-dir")

// awaitRoamingStore waits up to keptStoreWait for the store of the
// roaming workspace name to be free: its last holder may still be ending
// its session. Its caller holds no lock.
func awaitRoamingStore(cfg *Config, name string) {
	if !roamingStoresShared(cfg) {
		return
	}
	if dir, err := KeptStoreDir(cfg.CheckpointDir, name); err == nil {
		if f, err := lockKeptStore(dir, name, keptStoreWait); err == nil {
			f.Close()
		}
	}
}

// openRoamingStore gives s the shared checkpoint store of its roaming
// workspace, locked, when the servers share one; nothing otherwise.
func openRoamingStore(cfg *Config, s *Session) error {
	if !roamingStoresShared(cfg) {
		return nil
	}
	dir, err := KeptStoreDir(cfg.CheckpointDir, s.roaming.name)
	if err != nil {
		return err
	}
	lock, err := lockKeptStore(dir, s.roaming.name, 0)
	if err != nil {
		return err
	}
	s.storeDir, s.roaming.storeLock = dir, lock
	if _, err := s.checkpoints.Store(); err != nil { // finds a restore its last holder did not finish
		lock.Close()
		s.roaming.storeLock = nil
		return err
	}
	return nil
}

// endRoamingStore is the end of a roaming session's checkpoints: kept for
// the next server when it leaves the workspace to one (leaving),
// deleted otherwise; the store's lock goes either way.
func endRoamingStore(s *Session, leaving bool) {
	r := s.roaming
	if !leaving || r.storeLock == nil {
		if err := removeAll(s.storeDir); err != nil {
			s.m.log.Warn("deleting the session's checkpoints", "session", s.who.hash(), "err", err)
		} else if r.storeLock != nil {
			s.m.log.Info("deleted the checkpoints of a roaming workspace that ended", "session", s.who.hash(), "workspace", r.name)
		}
	}
	if r.storeLock != nil {
		r.storeLock.Close()
	}
}

// sweepRoamingStores deletes the shared checkpoint stores of roaming
// workspaces that ended with nobody to delete them: no lease of theirs is
// left (engine.RoamingHandoffs.RoamingNames, listed after the stores, so
// a store made since is not judged) and no session holds their lock.
// Of several servers sweeping at once, one deletes each, and logs it.
func sweepRoamingStores(ctx context.Context, m *Manager) error {
	lister, ok := m.eng.(engine.RoamingHandoffs)
	if !ok || !roamingStoresShared(&m.cfg) {
		return nil
	}
	entries, err := os.ReadDir(filepath.Join(m.cfg.CheckpointDir, keptStoresDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing the checkpoint stores: %w", err)
	}
	var stores []string
	for _, e := range entries {
		if e.IsDir() && engine.IsRoamingName(e.Name()) {
			stores = append(stores, e.Name())
		}
	}
	if len(stores) == 0 {
		return nil
	}
	live, err := lister.RoamingNames(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range stores {
		if slices.Contains(live, name) {
			continue
		}
		removed, err := removeUnheldStore(filepath.Join(m.cfg.CheckpointDir, keptStoresDir, name))
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("deleting the checkpoints of roaming workspace %s, which ended: %w", name, err))
		case removed:
			m.log.Info("deleted the checkpoints of a roaming workspace that ended", "workspace", name, "by", "sweep")
		}
	}
	return errors.Join(errs...)
}

// removeUnheldStore deletes the store dir unless a process holds its
// lock, reporting whether this call deleted it: its lock is taken first
// and the store deleted before it is let go, so a second sweeper finds
// it gone (or its lock file gone) once it gets the lock.
func removeUnheldStore(dir string) (bool, error) {
	f, err := os.OpenFile(filepath.Join(dir, storeLockFile), os.O_RDWR|noFollow, 0)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil // being made (its lock comes next), or deleted by another sweeper
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	if err := tryLock(f); err != nil {
		if errors.Is(err, errLocked) {
			return false, nil // held by a session
		}
		return false, err
	}
	if _, err := os.Stat(filepath.Join(dir, storeLockFile)); errors.Is(err, os.ErrNotExist) {
		return false, nil // deleted by the sweeper that held the lock before
	}
	return true, removeAll(dir)
}
