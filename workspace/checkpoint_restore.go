package workspace

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/wire"
)

// maxApplySteps bounds the steps of one OpApply request.
const maxApplySteps = 4096

// Restore implements Workspace. It stops the running commands and jobs,
// saves the state it leaves as an automatic checkpoint, and makes the
// workspace match the checkpoint id, under a journal: a process killed
// during the restore leaves it to be finished by the workspace's next
// owner, and a restore that fails here puts the workspace back as it was.
func (s *Session) Restore(ctx context.Context, id string) (RestoreResult, error) {
	defer s.enter()()
	start := time.Now()
	st, err := s.checkpointStore()
	if err != nil {
		return RestoreResult{}, err
	}
	target, err := st.Get(id)
	if err != nil {
		return RestoreResult{}, err
	}
	unlock, stopped, err := s.gate.lockAll(ctx)
	if err != nil {
		return RestoreResult{}, err
	}
	defer unlock()
	res := RestoreResult{Checkpoint: target, StoppedCommands: stopped}
	client, err := s.ensure(ctx)
	if err != nil {
		return res, err
	}
	if res.StoppedJobs, err = s.quiesce(ctx, client); err != nil {
		return res, err
	}
	if err := s.finishPendingRestore(ctx); err != nil {
		return res, err
	}
	journal := checkpoints.Journal{Target: target.ID, TargetRoot: target.Root, Started: time.Now().UTC()}
	// The scan of the state being replaced also plans the restore: nothing
	// changes in between, the gate held and the processes stopped.
	before, current, err := s.saveWith(ctx, client, st, Checkpoint{Auto: "before restore to " + id})
	if err == nil {
		res.Before, journal.Fallback, journal.FallbackRoot = before, before.ID, before.Root
	} else {
		s.m.log.Warn("restoring without a checkpoint of the state it leaves", "session", s.hash, "checkpoint", id, "err", err)
	}
	if err := st.BeginRestore(journal); err != nil {
		return res, err
	}
	counts, err := s.restoreTo(ctx, client, st, target.Root, current)
	if err != nil {
		return res, s.restoreFailed(ctx, client, st, journal, err)
	}
	if err := st.EndRestore(); err != nil {
		return res, err
	}
	s.pruneAuto(st, target.ID)
	res.Removed, res.Written, res.Unchanged = counts.Removed, counts.Written, counts.Unchanged
	res.Duration = time.Since(start)
	s.m.changed(ctx, s.id, s.touched.paths()...)
	s.m.log.Info("workspace restored", "event", "restore", "session", s.hash, "checkpoint", id, "before", res.Before.ID,
		"stopped_commands", res.StoppedCommands, "stopped_jobs", res.StoppedJobs, "removed", res.Removed, "written", res.Written, "unchanged", res.Unchanged,
		"duration_ms", res.Duration.Milliseconds())
	return res, nil
}

// restoreFailed puts the workspace back as the journal's fallback left it,
// or, when that fails too, leaves the journal for the next call to finish.
func (s *Session) restoreFailed(ctx context.Context, client *wire.Client, st *checkpoints.Store, j checkpoints.Journal, cause error) error {
	back := context.WithoutCancel(ctx)
	if j.FallbackRoot != "" {
		if _, err := s.restoreTo(back, client, st, j.FallbackRoot, nil); err == nil {
			if err := st.EndRestore(); err == nil {
				return fmt.Errorf("restoring checkpoint %s failed, so the workspace was put back as it was (saved as checkpoint %s): %w", j.Target, j.Fallback, cause)
			}
		}
	}
	s.restorePending.Store(true)
	return fmt.Errorf("restoring checkpoint %s failed, and the workspace could not be put back yet; the next call finishes the restore before anything else: %w", j.Target, cause)
}

// settlePendingRestore finishes a restore that did not finish before the
// call goes on: the workspace is never seen half restored.
func (s *Session) settlePendingRestore(ctx context.Context) error {
	if !s.restorePending.Load() {
		return nil
	}
	unlock, _, err := s.gate.lockAll(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return s.finishPendingRestore(ctx)
}

// finishPendingRestore brings the workspace to the target of an unfinished
// restore's journal (or, failing that, back to its fallback). The caller
// holds the gate whole.
func (s *Session) finishPendingRestore(ctx context.Context) error {
	if !s.restorePending.Load() {
		return nil
	}
	st, err := s.checkpointStore()
	if err != nil {
		return err
	}
	j, err := st.PendingRestore()
	if err != nil {
		return err
	}
	if j == nil {
		s.restorePending.Store(false)
		return nil
	}
	client, err := s.ensure(ctx)
	if err != nil {
		return err
	}
	if _, err := s.quiesce(ctx, client); err != nil {
		return err
	}
	_, err = s.restoreTo(ctx, client, st, j.TargetRoot, nil)
	if err != nil && j.FallbackRoot != "" {
		_, err = s.restoreTo(ctx, client, st, j.FallbackRoot, nil)
	}
	if err != nil {
		return fmt.Errorf("finishing the restore of checkpoint %s, which did not finish: %w", j.Target, err)
	}
	if err := st.EndRestore(); err != nil {
		return err
	}
	s.restorePending.Store(false)
	s.m.log.Info("workspace restore finished", "event", "restore_finished", "session", s.hash, "checkpoint", j.Target)
	return nil
}

// quiesce stops what runs in the container before a restore changes its
// files: the jobs (SIGTERM, then SIGKILL after the stop grace), and the
// commands whose calls the gate cancelled, whose trees die within their
// grace. It says how many jobs it stopped.
func (s *Session) quiesce(ctx context.Context, client *wire.Client) (int, error) {
	jobs := s.stopAllJobs(ctx, client)
	var left wire.WaitCommandsResult
	wait := MaxGrace + 5*time.Second
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
func (s *Session) stopAllJobs(ctx context.Context, client *wire.Client) int {
	if !s.jobsStarted.Load() {
		return 0
	}
	var list JobList
	if err := client.Call(ctx, wire.OpJobList, struct{}{}, &list); err != nil || list.Running == 0 {
		return 0
	}
	running := list.Running
	ctx, cancel := context.WithTimeout(ctx, s.m.cfg.StopGrace+5*time.Second)
	defer cancel()
	_ = client.Call(ctx, wire.OpJobStopAll, wire.JobStopAllArgs{GraceMillis: s.m.cfg.StopGrace.Milliseconds()}, &list)
	return running
}

// restoreCounts counts entries by what a restore did to them.
type restoreCounts struct{ Removed, Written, Unchanged int }

// restoreTo makes the workspace match the tree root: it removes what the
// tree lacks, writes what differs, leaves the rest, and then checks the
// result against the tree. current is a scan of the workspace as it is,
// or nil to scan it.
func (s *Session) restoreTo(ctx context.Context, client *wire.Client, st *checkpoints.Store, root string, current []wire.ScanEntry) (restoreCounts, error) {
	if current == nil {
		var err error
		if current, _, err = s.scanAll(ctx, client); err != nil {
			return restoreCounts{}, err
		}
	}
	target, err := walkTree(st.FS(root))
	if err != nil {
		return restoreCounts{}, err
	}
	p := planRestore(current, target, s.lastIndex())
	if err := s.applyPlan(ctx, client, st, p.steps); err != nil {
		return p.counts, err
	}
	after, started, err := s.scanAll(ctx, client)
	if err != nil {
		return p.counts, err
	}
	if err := matches(after, target); err != nil {
		return p.counts, fmt.Errorf("the workspace does not match the checkpoint after the restore: %w", err)
	}
	s.saveIndex(indexAfterRestore(after, target, started))
	return p.counts, nil
}

// applyPlan sends the steps, with the bytes of the files they write read
// from the store, a request at a time within the wire's limits.
func (s *Session) applyPlan(ctx context.Context, client *wire.Client, st *checkpoints.Store, steps []planStep) error {
	var batch []wire.ApplyStep
	var batchBytes int
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		var out wire.ApplyResult
		err := client.Call(ctx, wire.OpApply, wire.ApplyArgs{Steps: batch}, &out)
		batch, batchBytes = batch[:0], 0
		return err
	}
	add := func(step wire.ApplyStep) error {
		cost := len(step.Data) + len(step.Path.String()) + 64
		if step.Target != nil {
			cost += len(step.Target.String())
		}
		if len(batch) == maxApplySteps || batchBytes+cost > wire.MaxChunkBytes {
			if err := flush(); err != nil {
				return err
			}
		}
		batch = append(batch, step)
		batchBytes += cost
		return nil
	}
	for _, ps := range steps {
		if ps.blob == "" {
			if err := add(ps.ApplyStep); err != nil {
				return err
			}
			continue
		}
		if err := s.addUpload(st, ps, add); err != nil {
			return err
		}
	}
	return flush()
}

// addUpload adds the write steps of one file, its content read from the
// store in chunks.
func (s *Session) addUpload(st *checkpoints.Store, ps planStep, add func(wire.ApplyStep) error) error {
	r, err := st.OpenBlob(ps.blob)
	if err != nil {
		return err
	}
	defer r.Close()
	var token [8]byte
	_, _ = rand.Read(token[:])
	upload := hex.EncodeToString(token[:])
	buf := make([]byte, wire.MaxChunkBytes/2)
	var offset int64
	for {
		n, err := io.ReadFull(r, buf)
		last := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
		if err != nil && !last {
			return fmt.Errorf("reading checkpoint content for %s: %w", ps.Path.String(), err)
		}
		step := ps.ApplyStep
		step.Data, step.Offset, step.Upload, step.Final = append([]byte(nil), buf[:n]...), offset, upload, last
		if err := add(step); err != nil {
			return err
		}
		offset += int64(n)
		if last {
			return nil
		}
	}
}
