package workspace

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/wink-mcp/wink-mcp/workspace/disk"
)

// Prepare asks the Podman service what every container's creation needs
// from it once per process (the host's facts, and the image, pulled if it
// is missing), so that the first call does not wait for it. The server
// calls it in the background as it starts; an error is also the first
// call's, which reports it.
func (m *Manager) Prepare(ctx context.Context) error {
	// Before anything the engine makes: its probe containers too.
	if err := m.liveness.ensure(ctx, m.inst.id); err != nil {
		return err
	}
	host, err := m.eng.SettledHost(ctx)
	if err != nil {
		return err
	}
	if u := unenforced(host); u.Limits != "" {
		if m.cfg.AllowUnenforcedLimits {
			m.log.Warn("RESOURCE LIMITS ARE NOT ENFORCED: --allow-unenforced-limits runs containers without a "+u.Limits+" limit",
				"why", u.Why, "fix", u.Fix)
		} else {
			m.log.Error("every container will be refused", "err", limitsError(host, false))
		}
	}
	_, err = m.images.ServerImage(ctx)
	return err
}

// SweepOrphans removes the containers, and the session directories under
// this cache directory, of wink-mcp instances that are no longer running. It
// returns how many containers it removed. With an engine that holds
// instances' liveness (engine.InstanceLiveness), an instance is dead when
// the engine says so, whatever host made its containers, and what it left
// of its liveness is deleted too; else when its lock file on this host is
// not held.
func (m *Manager) SweepOrphans(ctx context.Context) (int, error) {
	found, err := m.eng.List(ctx, LabelManaged)
	if err != nil {
		return 0, err
	}
	removed := 0
	var errs []error
	orphan, deadByLock := m.liveness.orphanRule(ctx)
	for _, c := range found {
		if !orphan(c.Labels) || awaitsAdoption(ctx, m, c.Labels) {
			continue
		}
		start := time.Now()
		if err := m.discard(ctx, c.Name); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
		m.log.Info("workspace "+EventOrphanRemoved, "event", EventOrphanRemoved, "container", c.Name,
			"session", c.Labels[LabelSession], "instance", c.Labels[LabelInstance], "duration_ms", time.Since(start).Milliseconds())
	}
	if err := m.liveness.forgetDeadInstances(ctx, deadByLock); err != nil {
		errs = append(errs, err)
	}
	if err := sweepRoamingStores(ctx, m); err != nil { // after the idle roaming workspaces' leases went
		errs = append(errs, err)
	}
	if err := m.handedOverDisk.sweep(ctx); err != nil {
		errs = append(errs, err)
	}
	for _, dead := range deadInstanceDirs(m.cfg.CacheDir, m.inst) {
		dir := dead.dir
		awaitExitingHolder(filepath.Join(dir, lockFile), m.log) // dead, but still exiting: its lock goes with its last thread
		unlock, ok := lockInstance(dir)
		if !ok {
			continue // another server sweeps it
		}
		// Sessions whose changes were never exported are exported first;
		// those that cannot be stay, files and all.
		if recoverExports(ctx, m.log, m.cfg.CacheDir, dir) > 0 || dead.kept {
			unlock()
			continue
		}
		// A server killed with SIGKILL leaves its sessions' disks mounted.
		err := disk.UnmountUnder(dir)
		if err == nil {
			if err = removeAll(dir); err != nil {
				err = fmt.Errorf("deleting the directory of a dead instance: %w", err)
			}
		}
		unlock()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		m.log.Info("deleted the directory of a dead instance", "dir", dir)
	}
	return removed, errors.Join(errs...)
}

// discard removes a container and its workspace volume, if it has one.
func (m *Manager) discard(ctx context.Context, name string) error {
	if err := m.eng.Remove(ctx, name); err != nil {
		return err
	}
	if !m.cfg.FilesOnEngineHost {
		return nil
	}
	return m.eng.RemoveWorkspace(ctx, name)
}

// reapIdle removes the containers of idle sessions until ctx is done.
func (m *Manager) reapIdle(ctx context.Context) {
	defer close(m.reaperDone)
	tick := time.NewTicker(min(max(m.cfg.IdleTimeout/4, 50*time.Millisecond), 30*time.Second))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		m.mu.Lock()
		sessions := make([]*Session, 0, len(m.sessions))
		for _, s := range m.sessions {
			sessions = append(sessions, s)
		}
		m.mu.Unlock()
		for _, s := range sessions {
			rmCtx, cancel := context.WithTimeout(ctx, m.cfg.APITimeout)
			s.cleanupIfIdle(rmCtx, m.cfg.IdleTimeout)
			cancel()
		}
	}
}
