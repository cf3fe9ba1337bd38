package checkpoint

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/wire"
)

// Restore stops the running commands and jobs,
// saves the state it leaves as an automatic checkpoint, and makes the
// workspace match the checkpoint id, under a journal: a process killed
// during the restore leaves it to be finished by the workspace's next
// owner, and a restore that fails here puts the workspace back as it was.
// A restore whose automatic checkpoint cannot be saved, or whose result
// would not fit the workspace's disk, is refused before any file changes.
func (r *Room) Restore(ctx context.Context, id string) (RestoreResult, error) {
	defer r.deps.Enter()()
	start := time.Now()
	st, err := r.Store()
	if err != nil {
		return RestoreResult{}, err
	}
	target, err := st.Get(id)
	if err != nil {
		return RestoreResult{}, err
	}
	if err := r.SettlePendingRestore(ctx); err != nil {
		return RestoreResult{}, err
	}
	endPreflight := func() {}
	if r.deps.JobsStarted() || r.deps.CommandsRunning() {
		client, err := r.deps.Ensure(ctx)
		if err != nil {
			return RestoreResult{}, err
		}
		pre, err := r.preflightRestore(ctx, client, st, target)
		if err != nil {
			return RestoreResult{}, refused(id, "nothing changed (no command or job was stopped)", err)
		}
		endPreflight = sync.OnceFunc(pre.Done)
		defer endPreflight()
	}
	unlock, stopped, err := r.deps.LockAll(ctx)
	if err != nil {
		return RestoreResult{}, err
	}
	defer unlock()
	res := RestoreResult{Checkpoint: target, StoppedCommands: stopped}
	client, err := r.deps.Ensure(ctx)
	if err != nil {
		return res, err
	}
	if res.StoppedJobs, err = r.quiesce(ctx, client); err != nil {
		return res, err
	}
	if err := r.finishPendingRestore(ctx); err != nil {
		return res, err
	}
	// The scan of the state being replaced also plans the restore: nothing
	// changes in between, the gate held and the processes stopped.
	before, current, err := r.saveWith(ctx, client, st, Checkpoint{Auto: "before restore to " + id})
	endPreflight()
	if err != nil {
		return res, refused(id, "no file changed"+stoppedFirst(res), err)
	}
	res.Before = before
	plan, tree, err := r.planTo(ctx, client, st, target.Root, current)
	if err != nil {
		return res, refused(id, fmt.Sprintf("no file changed%s; the state it would have replaced is saved as checkpoint %s", stoppedFirst(res), before.ID), err)
	}
	journal := checkpoints.Journal{Target: target.ID, TargetRoot: target.Root, Fallback: before.ID, FallbackRoot: before.Root, Started: time.Now().UTC()}
	if err := st.BeginRestore(journal); err != nil {
		return res, refused(id, "no file changed"+stoppedFirst(res), err)
	}
	counts, err := r.applyTo(ctx, client, st, plan, tree)
	if err != nil {
		return res, r.restoreFailed(ctx, client, st, journal, err)
	}
	if err := st.EndRestore(); err != nil {
		return res, err
	}
	r.pruneAuto(st, target.ID)
	res.Removed, res.Written, res.Unchanged = counts.Removed, counts.Written, counts.Unchanged
	res.Duration = time.Since(start)
	r.deps.Changed(ctx)
	r.deps.Log.Info("workspace restored", "event", "restore", "session", r.deps.Hash(), "checkpoint", id, "before", res.Before.ID,
		"stopped_commands", res.StoppedCommands, "stopped_jobs", res.StoppedJobs, "removed", res.Removed, "written", res.Written, "unchanged", res.Unchanged,
		"duration_ms", res.Duration.Milliseconds())
	return res, nil
}

// refused is the error of a restore that changed no file: why, and what
// did happen.
func refused(id, what string, err error) error {
	return fmt.Errorf("restoring checkpoint %s was refused, and %s: %w", id, what, err)
}

// stoppedFirst says what a refused restore stopped before it was refused.
func stoppedFirst(r RestoreResult) string {
	if r.StoppedCommands+r.StoppedJobs == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d running commands and %d background jobs were stopped first)", r.StoppedCommands, r.StoppedJobs)
}

// preflightRestore saves the state a restore would replace, without
// committing it and with the commands and jobs still running, and checks
// that the checkpoint fits the workspace's disk: a restore that could not
// keep its undo checkpoint, or would not fit, is refused before anything
// is stopped. The snapshot's objects stay until done is called, so the
// save after the stop reads again only what changed since.
func (r *Room) preflightRestore(ctx context.Context, client *wire.Client, st *checkpoints.Store, target Checkpoint) (*snapshotState, error) {
	unlock, err := r.deps.LockFiles(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	snap, err := r.snapshot(ctx, client, st)
	if err != nil {
		return nil, fmt.Errorf("the checkpoint of the current state, which would undo the restore, cannot be saved: %w", err)
	}
	r.saveIndex(snap.Index)
	if _, _, err := r.planTo(ctx, client, st, target.Root, snap.Entries); err != nil {
		snap.Done()
		return nil, err
	}
	return snap, nil
}

// restoreFailed puts the workspace back as the journal's fallback left it,
// or, when that fails too, leaves the journal for the next call to finish.
func (r *Room) restoreFailed(ctx context.Context, client *wire.Client, st *checkpoints.Store, j checkpoints.Journal, cause error) error {
	back := context.WithoutCancel(ctx)
	cause = r.WithDiskAdvice(back, cause)
	_, err := r.restoreTo(back, client, st, j.FallbackRoot, nil)
	if err == nil {
		if err = st.EndRestore(); err == nil {
			return fmt.Errorf("restoring checkpoint %s failed, so the workspace was put back as it was (saved as checkpoint %s): %w", j.Target, j.Fallback, cause)
		}
	}
	r.pending.Store(true)
	return fmt.Errorf("restoring checkpoint %s failed (%w), and putting the workspace back as checkpoint %s failed too (%v); %s",
		j.Target, cause, j.Fallback, r.WithDiskAdvice(back, err), pendingAdvice)
}

// pendingAdvice says what a workspace with an unfinished restore can do.
const pendingAdvice = "until the restore finishes, every call that reads or changes /workspace tries again first and fails like this; " +
	"the job tool (job action=forget frees a finished job's kept output), workspace_checkpoints and workspace_checkpoint_delete still work, " +
	"and podman_shell action=stop empties /workspace, after which the restore finishes"

// SettlePendingRestore finishes a restore that did not finish before the
// call goes on: the workspace is never seen half restored.
func (r *Room) SettlePendingRestore(ctx context.Context) error {
	if !r.pending.Load() {
		return nil
	}
	unlock, _, err := r.deps.LockAll(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return r.finishPendingRestore(ctx)
}

// finishPendingRestore brings the workspace to the target of an unfinished
// restore's journal (or, failing that, back to its fallback). The caller
// holds the gate whole.
func (r *Room) finishPendingRestore(ctx context.Context) error {
	if !r.pending.Load() {
		return nil
	}
	st, err := r.Store()
	if err != nil {
		return err
	}
	j, err := st.PendingRestore()
	if err != nil {
		return err
	}
	if j == nil {
		r.pending.Store(false)
		return nil
	}
	client, err := r.deps.Ensure(ctx)
	if err != nil {
		return err
	}
	if _, err := r.quiesce(ctx, client); err != nil {
		return err
	}
	_, err = r.restoreTo(ctx, client, st, j.TargetRoot, nil)
	if err != nil && j.FallbackRoot != "" {
		_, err = r.restoreTo(ctx, client, st, j.FallbackRoot, nil)
	}
	if err != nil {
		return fmt.Errorf("finishing the restore of checkpoint %s, which did not finish: %w; %s", j.Target, r.WithDiskAdvice(ctx, err), pendingAdvice)
	}
	if err := st.EndRestore(); err != nil {
		return err
	}
	r.pending.Store(false)
	r.deps.Log.Info("workspace restore finished", "event", "restore_finished", "session", r.deps.Hash(), "checkpoint", j.Target)
	return nil
}

// quiesce stops what runs in the container before a restore changes its
// files: the jobs (SIGTERM, then SIGKILL after the stop grace), and the
// commands whose calls the gate cancelled, whose trees die within their
// grace. It says how many jobs it stopped.
func (r *Room) quiesce(ctx context.Context, client *wire.Client) (int, error) {
	jobs := r.stopAllJobs(ctx, client)
	var left wire.WaitCommandsResult
	wait := r.deps.MaxGrace + 5*time.Second
	if err := client.Call(ctx, wire.OpWaitCommands, wire.WaitCommandsArgs{TimeoutMillis: wait.Milliseconds()}, &left); err != nil {
		return jobs, err
	}
	if left.Running > 0 {
		return jobs, fmt.Errorf("%d stopped commands were still running after %s; nothing was restored", left.Running, wait)
	}
	return jobs, nil
}

// stopAllJobs stops the running jobs (SIGTERM, then SIGKILL after the stop
// grace) and says how many there were.
func (r *Room) stopAllJobs(ctx context.Context, client *wire.Client) int {
	if !r.deps.JobsStarted() {
		return 0
	}
	var list wire.JobListResult
	if err := client.Call(ctx, wire.OpJobList, struct{}{}, &list); err != nil || list.Running == 0 {
		return 0
	}
	running := list.Running
	ctx, cancel := context.WithTimeout(ctx, r.deps.StopGrace+5*time.Second)
	defer cancel()
	_ = client.Call(ctx, wire.OpJobStopAll, wire.JobStopAllArgs{GraceMillis: r.deps.StopGrace.Milliseconds()}, &list)
	return running
}
