package workspace

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/wink-mcp/wink-mcp/workspace/disk"
)

// unmountDiskLocked unmounts the session's filesystem, keeping its image
// (FindSessions mounts kept images again to read them).
func (s *Session) unmountDiskLocked() bool {
	if !s.disk {
		return true
	}
	if err := disk.Unmount(s.dir); err != nil {
		s.m.log.Warn("unmounting session disk", "session", s.who.hash(), "err", err)
		return false
	}
	s.disk = false
	return true
}

// deleteFilesLocked deletes the session directory and its filesystem.
func (s *Session) deleteFilesLocked() {
	if !s.unmountDiskLocked() {
		return
	}
	if err := os.Remove(s.diskFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.m.log.Warn("deleting session disk image", "session", s.who.hash(), "err", err)
	}
	if err := removeAll(s.dir); err != nil {
		s.m.log.Warn("deleting session directory", "session", s.who.hash(), "dir", s.dir, "err", err)
	}
}

// removeLocked removes the container; the channel dies with it.
func (s *Session) removeLocked(ctx context.Context) error {
	if !s.created {
		s.dropChannelLocked()
		return nil
	}
	s.jobs.StopAll(ctx, s.client)
	// The listeners on the services' ports go with the container; the
	// services run on, and the next container listens again (Attach).
	s.services.Detach()
	err := s.m.eng.Remove(ctx, s.name)
	s.dropChannelLocked()
	if err != nil {
		return err
	}
	s.created = false
	s.containerQuota.Release()
	s.containerQuota = nil
	s.jobs.ContainerGone()
	return nil
}

// cleanupIfIdle removes the container when no call has run for idle. The
// files stay (or, when they go with the container, are saved and restored
// into the next one); the next call starts a new container on them.
func (s *Session) cleanupIfIdle(ctx context.Context, idle time.Duration) {
	last := time.Unix(0, s.lastUsed.Load())
	if s.active.Load() > 0 || time.Since(last) < idle {
		return
	}
	// A session busy creating or removing its container is not idle.
	if !s.mu.TryLock() {
		return
	}
	defer s.mu.Unlock()
	if !s.created || s.ended || s.active.Load() > 0 {
		return
	}
	if s.jobs.KeepIdle(ctx, s.client) {
		return
	}
	if s.filesGoWithContainer() {
		// The files go with the container: the next one gets them back.
		if err := s.checkpoints.Hibernate(ctx, s.client, "idle"); err != nil {
			s.lastUsed.Store(time.Now().UnixNano()) // tried again after another idle period
			s.m.log.Warn("the idle container is kept: its files, which go with it, could not be saved for the next one", "session", s.who.hash(), "container", s.name, "err", err)
			return
		}
	} else {
		s.checkpoints.AutoCheckpoint(ctx, s.client, "idle")
	}
	start := time.Now()
	if err := s.removeLocked(ctx); err != nil {
		s.m.log.Warn("idle cleanup failed", "session", s.who.hash(), "container", s.name, "err", err)
		return
	}
	logEvent(s.m.log, EventIdleCleanup, s, start, "idle_ms", time.Since(last).Milliseconds())
}

// beginEnd marks the session ended, its prestart stopped and its ports
// closed, holding its locks until unlock is called; ok is false when it
// had ended already.
func (s *Session) beginEnd() (unlock func(), ok bool) {
	s.endLife()            // stops a Prestart, which holds mu while it creates
	s.mounts.pullMu.Lock() // a read of the changes finishes before the files go
	s.mu.Lock()
	unlock = func() {
		s.mu.Unlock()
		s.mounts.pullMu.Unlock()
	}
	if s.ended {
		return unlock, false
	}
	s.ended = true
	s.ports.CloseAll()
	return unlock, true
}

// removeOrRetryLocked removes the container, leaving a removal that fails
// to be retried in the background.
func (s *Session) removeOrRetryLocked(ctx context.Context) error {
	err := s.removeLocked(ctx)
	if err != nil {
		s.m.log.Warn("removing the container failed; retrying in the background", "session", s.who.hash(), "container", s.name, "err", err)
		s.m.removeLater(s.name)
	}
	return err
}

// end removes the container and, unless they are kept, the session's files.
func (s *Session) end(ctx context.Context) {
	unlock, ok := s.beginEnd()
	defer unlock()
	if !ok {
		return
	}
	start := time.Now()
	had := s.created
	servicesGone := goAlong(func() { s.services.Close(ctx) }) // removed beside the workspace's container
	defer func() { <-servicesGone }()
	// A pooled container no session took holds nobody's work; a
	// handed-over workspace exports by its own marker, once its container
	// is gone (endHandedOverLocked).
	handedOver := s.kept != nil && s.kept.fromHandoff
	exportNow := s.m.cfg.ExportDir != "" && len(s.mounts.list) > 0 && s.who.id() != "" && !handedOver
	if exportNow {
		// The files are final once the jobs have stopped: the export and
		// the container's removal need not wait for each other.
		s.jobs.StopAll(ctx, s.client)
	}
	if exportNow && s.m.cfg.FilesOnEngineHost {
		// The copies are on the Podman host: bring them back while a container holds them.
		if err := s.mounts.pullForExportLocked(ctx); err != nil {
			s.m.log.Error("exporting the session's changes failed", "session", s.who.hash(), "err", err)
			exportNow = false
		}
	}
	exported := make(chan bool, 1)
	if exportNow {
		mounts := s.infoLocked().Mounts
		go func() { exported <- s.mounts.exportOnEnd(ctx, time.Now(), mounts) }()
	} else {
		exported <- true
	}
	left := !exportNow && leaveForAdoption(s)
	if left {
		had = false
	} else if err := s.removeOrRetryLocked(ctx); err == nil && s.m.cfg.FilesOnEngineHost {
		if err := s.m.eng.RemoveWorkspace(ctx, s.name); err != nil {
			s.m.log.Warn("removing the workspace volume at session end failed; retrying in the background", "session", s.who.hash(), "volume", s.name, "err", err)
			s.m.removeLater(s.name)
		}
	}
	saved := <-exported
	switch {
	case handedOver:
		// Still a session's own: it goes with it, once its changes are exported.
		s.handoffs.endHandedOverLocked(ctx)
	case s.roaming != nil:
		// Its container was removed or left for the next server; the
		// lease goes, or stays for that server (engine.KeptAsk.Roaming).
		// Its checkpoints stay for that server, or go with it (roaming_store.go).
		s.deleteFilesLocked()
		endRoamingStore(s, leavesForNextServer(s))
		s.roaming.held.Release(ctx)
	case s.kept != nil && s.kept.held != nil:
		// Its files are on the engine's volume and its checkpoints in the
		// shared checkpoint directory; what is here goes.
		s.kept.release(s.meter.Used())
		s.deleteFilesLocked()
		s.m.log.Info("kept workspace released", "event", "workspace_released", "session", s.who.hash(), "workspace", s.kept.name)
	case s.kept != nil:
		s.unmountDiskLocked()
		s.kept.release(s.meter.Used())
		s.m.log.Info("kept workspace released", "event", "workspace_released", "session", s.who.hash(), "workspace", s.kept.name)
	case s.m.cfg.KeepSessionDirs:
		s.unmountDiskLocked()
	case !saved && s.mounts.exportsOnEnd():
		// Kept, disk and all, for the next server or `wink-mcp export`
		// (exportOnEnd logged how): nothing unexported is deleted.
	default:
		s.deleteFilesLocked()
		if err := removeAll(s.storeDir); err != nil {
			s.m.log.Warn("deleting the session's checkpoints", "session", s.who.hash(), "err", err)
		}
	}
	if keptOnDisk := s.kept != nil && s.kept.held == nil && !handedOver; !keptOnDisk {
		// Its store is deleted, is no longer a workspace of its client's,
		// or is an engine's kept workspace's store in the shared
		// --checkpoint-dir, which counts only while a session has it open.
		s.checkpoints.Uncharge()
	}
	if had {
		logEvent(s.m.log, EventRemoved, s, start, "reason", "session ended")
	}
}

// goAlong runs f in a goroutine of its own and returns what closes when it
// returns.
func goAlong(f func()) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	return done
}
