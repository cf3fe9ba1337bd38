package checkpoint

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

// KeptAutoCheckpoints is how many automatic checkpoints a workspace keeps;
// older ones are deleted when a new one is taken.
const KeptAutoCheckpoints = 10

// List is a workspace's checkpoints and what they cost.
type List struct {
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
func (r *Room) Checkpoint(ctx context.Context, message string) (Checkpoint, error) {
	defer r.deps.Enter()()
	if err := r.SettlePendingRestore(ctx); err != nil {
		return Checkpoint{}, err
	}
	unlock, err := r.deps.LockFiles(ctx)
	if err != nil {
		return Checkpoint{}, err
	}
	defer unlock()
	return r.save(ctx, checkpoints.Checkpoint{Message: message})
}

// Checkpoints lists the workspace's checkpoints, oldest first.
func (r *Room) Checkpoints(context.Context) (List, error) {
	defer r.deps.Enter()()
	st, err := r.Store()
	if err != nil {
		return List{}, err
	}
	list, err := st.List()
	return List{Checkpoints: list, StoreBytes: st.Bytes(), CapBytes: st.Cap()}, err
}

// DeleteCheckpoints deletes checkpoints and returns the bytes this freed.
func (r *Room) DeleteCheckpoints(ctx context.Context, ids []string) (int64, error) {
	defer r.deps.Enter()()
	unlock, err := r.deps.LockFiles(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	st, err := r.Store()
	if err != nil {
		return 0, err
	}
	if j, _ := st.PendingRestore(); j != nil && (slices.Contains(ids, j.Target) || slices.Contains(ids, j.Fallback)) {
		return 0, fmt.Errorf("checkpoint %s is needed by a restore that has not finished; try again after the next call", j.Target)
	}
	return st.Delete(ids...)
}

// Store opens the session's store on first use. A restore the last owner
// of the workspace did not finish is found then, and finished before the
// next call.
func (r *Room) Store() (*checkpoints.Store, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.store != nil {
		return r.store, nil
	}
	st, err := checkpoints.Open(r.deps.StoreDir(), r.deps.CapBytes)
	if err != nil {
		return nil, fmt.Errorf("opening the workspace's checkpoints: %w", err)
	}
	if j, err := st.PendingRestore(); err != nil || j != nil {
		r.pending.Store(true)
	}
	if r.deps.Budget != nil {
		if b := r.deps.Budget(r.deps.StoreDir()); b != nil {
			r.budget = st.ChargeTo(b)
		}
	}
	r.store, r.index = st, st.LoadIndex()
	return st, nil
}

// Uncharge gives back to the store's budget all it counted, and stops
// counting: the session ended and its store goes. A kept workspace's
// store stays, and stays counted (its next session's store is charged
// to the same account again).
func (r *Room) Uncharge() {
	r.mu.Lock()
	b := r.budget
	r.budget = nil
	r.mu.Unlock()
	if b != nil {
		b.Close()
	}
}

// save takes a checkpoint described by meta. The caller holds the files
// gate whole.
func (r *Room) save(ctx context.Context, meta Checkpoint) (Checkpoint, error) {
	client, err := r.deps.Ensure(ctx)
	if err != nil {
		return Checkpoint{}, err
	}
	st, err := r.Store()
	if err != nil {
		return Checkpoint{}, err
	}
	cp, _, err := r.saveWith(ctx, client, st, meta)
	return cp, err
}

// saveWith takes a checkpoint through client into st and records the
// files' state; it returns the scan the checkpoint was made from. The
// caller holds the files gate whole.
func (r *Room) saveWith(ctx context.Context, client *wire.Client, st *checkpoints.Store, meta Checkpoint) (Checkpoint, []wire.ScanEntry, error) {
	start := time.Now()
	snap, err := r.snapshot(ctx, client, st)
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
	snap.steps.Done("commit")
	r.saveIndex(snap.Index)
	snap.steps.Done("index")
	r.deps.Log.Info("workspace checkpoint", "event", "checkpoint", "session", r.deps.Hash(), "checkpoint", cp.ID, "auto", cp.Auto,
		"files", cp.Files, "bytes", cp.Bytes, "added_bytes", cp.Added, "fetched_files", snap.Fetched, "duration_ms", time.Since(start).Milliseconds(),
		"steps", snap.steps.String())
	return cp, snap.Entries, nil
}

// saveIndex keeps idx as the files' last known state.
func (r *Room) saveIndex(idx checkpoints.Index) {
	r.mu.Lock()
	r.index = idx
	st := r.store
	r.mu.Unlock()
	if err := st.SaveIndex(idx); err != nil {
		r.deps.Log.Warn("saving the checkpoint index failed; the next checkpoint reads every file again", "session", r.deps.Hash(), "err", err)
	}
}

// lastIndex returns the files' last known state.
func (r *Room) lastIndex() checkpoints.Index {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.index
}

// pruneAuto deletes the oldest automatic checkpoints past
// KeptAutoCheckpoints, never one named in keep (the one just restored).
func (r *Room) pruneAuto(st *checkpoints.Store, keep ...string) {
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
	if len(auto) <= KeptAutoCheckpoints {
		return
	}
	if j, _ := st.PendingRestore(); j != nil {
		return // it may need one of them
	}
	if _, err := st.Delete(auto[:len(auto)-KeptAutoCheckpoints]...); err != nil {
		r.deps.Log.Warn("deleting old automatic checkpoints", "session", r.deps.Hash(), "err", err)
	}
}

// AutoCheckpoint takes an automatic checkpoint through client (nil when
// the channel is closed: then it takes none) before the container goes
// for idleness, so that nothing is lost to hibernation. It is skipped
// when a call holds the files (then the session is not idle). The caller
// holds the session's lock, which keeps the channel open.
func (r *Room) AutoCheckpoint(ctx context.Context, client *wire.Client, why string) {
	if client == nil || !r.hasCheckpointsOrFiles() {
		return
	}
	unlock, ok := r.deps.TryLockFiles()
	if !ok {
		return
	}
	defer unlock()
	st, err := r.Store()
	if err == nil {
		_, _, err = r.saveWith(ctx, client, st, Checkpoint{Auto: why})
	}
	if err != nil {
		r.deps.Log.Warn("automatic checkpoint failed", "session", r.deps.Hash(), "why", why, "err", err)
		return
	}
	r.pruneAuto(st)
}

// hasCheckpointsOrFiles says whether an automatic checkpoint could hold
// anything: the session wrote through a tool or ran a command, or already
// has checkpoints.
func (r *Room) hasCheckpointsOrFiles() bool {
	return r.deps.WroteFiles() || r.HasCheckpoints()
}

// HasCheckpoints says whether the workspace has checkpoints.
func (r *Room) HasCheckpoints() bool {
	entries, err := os.ReadDir(filepath.Join(r.deps.StoreDir(), "checkpoints"))
	return err == nil && len(entries) > 0
}
