package workspace

import (
	"context"
	"errors"

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
// checkpoint), which reaches the session through what it is given here.
func (s *Session) newCheckpoints() *checkpoint.Room {
	return checkpoint.New(checkpoint.Deps{
		StoreDir:  func() string { return s.storeDir },
		CapBytes:  s.m.cfg.CheckpointBytes,
		StopGrace: s.m.cfg.StopGrace,
		MaxGrace:  MaxGrace,
		Log:       s.m.log,
		Hash:      s.hash,
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
		JobsStarted:     s.jobsStarted.Load,
		WroteFiles:      func() bool { return len(s.touched.List()) > 0 || s.ranCommands.Load() },
		SkipPaths:       s.skipPaths,
		Changed:         func(ctx context.Context) { s.m.changed(ctx, s.id(), s.touched.Paths()...) },
	})
}

// Checkpoint saves the whole /workspace, the changes to mounted folders
// included, as a new checkpoint.
func (s *Session) Checkpoint(ctx context.Context, message string) (Checkpoint, error) {
	defer s.enter()()
	return s.checkpoints.Checkpoint(ctx, message)
}

// Checkpoints lists the workspace's checkpoints, oldest first.
func (s *Session) Checkpoints(ctx context.Context) (CheckpointList, error) {
	defer s.enter()()
	return s.checkpoints.Checkpoints()
}

// DeleteCheckpoints deletes checkpoints and returns the bytes this freed.
func (s *Session) DeleteCheckpoints(ctx context.Context, ids []string) (int64, error) {
	defer s.enter()()
	return s.checkpoints.DeleteCheckpoints(ctx, ids)
}

// Restore stops the running commands and jobs, saves the state it leaves
// as an automatic checkpoint, and makes the workspace match the checkpoint
// id, under a journal (see checkpoint.Room.Restore): a restore that fails
// puts the workspace back as it was, or leaves it for the next call to
// finish.
func (s *Session) Restore(ctx context.Context, id string) (RestoreResult, error) {
	defer s.enter()()
	return s.checkpoints.Restore(ctx, id)
}

// CheckpointDiff diffs the changes from checkpoint from to
// checkpoint to (or to the workspace now, CheckpointNow), under prefix
// ("" for all), as a unified diff of at most MaxDiffBytes.
func (s *Session) CheckpointDiff(ctx context.Context, from, to, prefix string) (DiffResult, error) {
	defer s.enter()()
	w := &cappedBuffer{limit: MaxDiffBytes}
	err := s.checkpoints.Diff(ctx, from, to, prefix, w, DiffTextLimit)
	if errors.Is(err, errDiffFull) {
		return DiffResult{Text: w.String(), Truncated: true}, nil
	}
	return DiffResult{Text: w.String()}, err
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
