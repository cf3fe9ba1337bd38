package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/wire"
)

// Checkpoint is a saved state of a session's /workspace.
type Checkpoint = checkpoints.Checkpoint

// ErrCheckpointNotFound means no checkpoint of the workspace has the ID.
var ErrCheckpointNotFound = checkpoints.ErrNotFound

// keptAutoCheckpoints is how many automatic checkpoints a workspace keeps;
// older ones are deleted when a new one is taken.
const keptAutoCheckpoints = 10

// CheckpointList is a workspace's checkpoints and what they cost.
type CheckpointList struct {
	Checkpoints []Checkpoint
	// StoreBytes is the size of everything the checkpoints hold, shared
	// objects once; CapBytes bounds it.
	StoreBytes, CapBytes int64
}

// RestoreResult is what a restore did.
type RestoreResult struct {
	// Checkpoint is the checkpoint the workspace now matches.
	Checkpoint Checkpoint
	// Before is the automatic checkpoint of the state the restore left.
	Before Checkpoint
	// StoppedCommands and StoppedJobs count what was running and stopped.
	StoppedCommands, StoppedJobs int
	// Removed, Written and Unchanged count entries by what the restore did.
	Removed, Written, Unchanged int
	Duration                    time.Duration
}

// Checkpoint saves the whole /workspace, the changes to mounted folders
// included, as a new checkpoint.
func (s *Session) Checkpoint(ctx context.Context, message string) (Checkpoint, error) {
	defer s.enter()()
	if err := s.settlePendingRestore(ctx); err != nil {
		return Checkpoint{}, err
	}
	unlock, err := s.gate.lockFiles(ctx)
	if err != nil {
		return Checkpoint{}, err
	}
	defer unlock()
	return s.save(ctx, checkpoints.Checkpoint{Message: message})
}

// Checkpoints lists the workspace's checkpoints, oldest first.
func (s *Session) Checkpoints(ctx context.Context) (CheckpointList, error) {
	defer s.enter()()
	st, err := s.checkpointStore()
	if err != nil {
		return CheckpointList{}, err
	}
	list, err := st.List()
	return CheckpointList{Checkpoints: list, StoreBytes: st.Bytes(), CapBytes: st.Cap()}, err
}

// DeleteCheckpoints deletes checkpoints and returns the bytes this freed.
func (s *Session) DeleteCheckpoints(ctx context.Context, ids []string) (int64, error) {
	defer s.enter()()
	unlock, err := s.gate.lockFiles(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	st, err := s.checkpointStore()
	if err != nil {
		return 0, err
	}
	if j, _ := st.PendingRestore(); j != nil && (slices.Contains(ids, j.Target) || slices.Contains(ids, j.Fallback)) {
		return 0, fmt.Errorf("checkpoint %s is needed by a restore that has not finished; try again after the next call", j.Target)
	}
	return st.Delete(ids...)
}

// checkpointStore opens the session's store on first use. A restore the
// last owner of the workspace did not finish is found then, and finished
// before the next call.
func (s *Session) checkpointStore() (*checkpoints.Store, error) {
	s.storeMu.Lock()
	defer s.storeMu.Unlock()
	if s.store != nil {
		return s.store, nil
	}
	st, err := checkpoints.Open(s.storeDir, s.m.cfg.CheckpointBytes)
	if err != nil {
		return nil, fmt.Errorf("opening the workspace's checkpoints: %w", err)
	}
	if j, err := st.PendingRestore(); err != nil || j != nil {
		s.restorePending.Store(true)
	}
	s.store, s.index = st, st.LoadIndex()
	return st, nil
}

// save takes a checkpoint described by meta. The caller holds the files
// gate whole.
func (s *Session) save(ctx context.Context, meta Checkpoint) (Checkpoint, error) {
	client, err := s.ensure(ctx)
	if err != nil {
		return Checkpoint{}, err
	}
	st, err := s.checkpointStore()
	if err != nil {
		return Checkpoint{}, err
	}
	cp, _, err := s.saveWith(ctx, client, st, meta)
	return cp, err
}

// saveWith takes a checkpoint through client into st and records the
// files' state; it returns the scan the checkpoint was made from. The
// caller holds the files gate whole.
func (s *Session) saveWith(ctx context.Context, client *wire.Client, st *checkpoints.Store, meta Checkpoint) (Checkpoint, []wire.ScanEntry, error) {
	start := time.Now()
	snap, err := s.snapshot(ctx, client, st)
	if err != nil {
		return Checkpoint{}, nil, fmt.Errorf("saving a checkpoint: %w", err)
	}
	meta.Root, meta.Files, meta.Dirs, meta.Symlinks, meta.Fifos = snap.Root, snap.Files, snap.Dirs, snap.Symlinks, snap.Fifos
	meta.Bytes, meta.Added, meta.Skipped = snap.Bytes, snap.Build.Added(), snap.Skipped
	cp, err := st.Commit(meta)
	if err != nil {
		snap.Abort()
		return Checkpoint{}, nil, err
	}
	snap.Done()
	snap.steps.done("commit")
	s.saveIndex(snap.Index)
	snap.steps.done("index")
	s.m.log.Info("workspace checkpoint", "event", "checkpoint", "session", s.hash(), "checkpoint", cp.ID, "auto", cp.Auto,
		"files", cp.Files, "bytes", cp.Bytes, "added_bytes", cp.Added, "fetched_files", snap.Fetched, "duration_ms", time.Since(start).Milliseconds(),
		"steps", snap.steps.String())
	return cp, snap.Entries, nil
}

// saveIndex keeps idx as the files' last known state.
func (s *Session) saveIndex(idx checkpoints.Index) {
	s.storeMu.Lock()
	s.index = idx
	st := s.store
	s.storeMu.Unlock()
	if err := st.SaveIndex(idx); err != nil {
		s.m.log.Warn("saving the checkpoint index failed; the next checkpoint reads every file again", "session", s.hash(), "err", err)
	}
}

// lastIndex returns the files' last known state.
func (s *Session) lastIndex() checkpoints.Index {
	s.storeMu.Lock()
	defer s.storeMu.Unlock()
	return s.index
}

// pruneAuto deletes the oldest automatic checkpoints past
// keptAutoCheckpoints, never one named in keep (the one just restored).
func (s *Session) pruneAuto(st *checkpoints.Store, keep ...string) {
	list, err := st.List()
	if err != nil {
		return
	}
	var auto []string
	for _, cp := range list {
		if cp.Auto != "" && !slices.Contains(keep, cp.ID) {
			auto = append(auto, cp.ID)
		}
	}
	if len(auto) <= keptAutoCheckpoints {
		return
	}
	if j, _ := st.PendingRestore(); j != nil {
		return // it may need one of them
	}
	if _, err := st.Delete(auto[:len(auto)-keptAutoCheckpoints]...); err != nil {
		s.m.log.Warn("deleting old automatic checkpoints", "session", s.hash(), "err", err)
	}
}

// autoCheckpointLocked takes an automatic checkpoint before the container
// goes for idleness, so that nothing is lost to hibernation. It is skipped
// when a call holds the files (then the session is not idle). The caller
// holds s.mu and the channel is open.
func (s *Session) autoCheckpointLocked(ctx context.Context, why string) {
	if s.client == nil || !s.hasCheckpointsOrFiles() {
		return
	}
	unlock, ok := s.gate.tryLockFiles()
	if !ok {
		return
	}
	defer unlock()
	st, err := s.checkpointStore()
	if err == nil {
		_, _, err = s.saveWith(ctx, s.client, st, Checkpoint{Auto: why})
	}
	if err != nil {
		s.m.log.Warn("automatic checkpoint failed", "session", s.hash(), "why", why, "err", err)
		return
	}
	s.pruneAuto(st)
}

// hasCheckpointsOrFiles says whether an automatic checkpoint could hold
// anything: the session wrote through a tool or ran a command, or already
// has checkpoints.
func (s *Session) hasCheckpointsOrFiles() bool {
	return len(s.touched.List()) > 0 || s.ranCommands.Load() || s.hasCheckpoints()
}

// hasCheckpoints says whether the workspace has checkpoints.
func (s *Session) hasCheckpoints() bool {
	entries, err := os.ReadDir(filepath.Join(s.storeDir, "checkpoints"))
	return err == nil && len(entries) > 0
}

// skipPaths are the workspace paths a checkpoint leaves out: the read-only
// mounts, which no call can change (recorded when the mounts are fixed, so
// that it needs no lock).
func (s *Session) skipPaths() []string {
	if p := s.readOnlyPaths.Load(); p != nil {
		return *p
	}
	return nil
}
