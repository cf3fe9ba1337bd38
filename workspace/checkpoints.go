package workspace

import (
	"context"

	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/wire"
	"github.com/wink-mcp/wink-mcp/workspace/checkpoint"
)

// Checkpoint is a saved state of a session's /workspace.
type Checkpoint = checkpoints.Checkpoint

// ErrCheckpointNotFound means no checkpoint of the workspace has the ID.
var ErrCheckpointNotFound = checkpoints.ErrNotFound

// CheckpointList is a workspace's checkpoints and what they cost.
type CheckpointList = checkpoint.List

// RestoreResult is what a restore did.
type RestoreResult = checkpoint.RestoreResult

// CheckpointNow names the workspace as it is now in CheckpointDiff.
const CheckpointNow = checkpoint.Now

// newCheckpoints returns the session's checkpoints room (package
// checkpoint), which reaches the session through what it is given here
// and serves the checkpoint tools itself (Parts).
func (s *Session) newCheckpoints() *checkpoint.Room {
	return checkpoint.New(checkpoint.Deps{
		StoreDir:  func() string { return s.storeDir },
		CapBytes:  s.m.cfg.CheckpointBytes,
		StopGrace: s.m.cfg.StopGrace,
		MaxGrace:  MaxGrace,
		Log:       s.m.log,
		Hash:      s.who.hash,
		Ensure:    s.ensure,
		Client: func() *wire.Client {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.client
		},
		LockFiles:       s.gate.lockFiles,
		TryLockFiles:    s.gate.tryLockFiles,
		LockAll:         s.gate.lockAll,
		CommandsRunning: s.gate.commandsRunning,
		JobsStarted:     s.jobs.Started,
		WroteFiles:      func() bool { return len(s.touched.List()) > 0 || s.ranCommands.Load() },
		SkipPaths:       s.skipPaths,
		Changed:         func(ctx context.Context) { s.m.changed(ctx, s.who.id(), s.touched.Paths()...) },
		Enter:           s.enter,
		Budget: func(dir string) checkpoints.Budget {
			if a := s.m.cfg.Quotas.Checkpoints(s.principal, dir); a != nil {
				return a
			}
			return nil // not a nil *quota.StoreAccount in the interface
		},
	})
}

// skipPaths are the workspace paths a checkpoint leaves out: the read-only
// mounts, which no call can change (recorded when the mounts are fixed, so
// that it needs no lock).
func (s *Session) skipPaths() []string {
	if p := s.mounts.readOnlyPaths.Load(); p != nil {
		return *p
	}
	return nil
}
