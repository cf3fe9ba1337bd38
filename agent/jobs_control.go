//go:build linux

package agent

import (
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wink-mcp/wink-mcp/wire"
)

// closeStdin closes j's standard input.
func (j *job) closeStdin() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.stdin != nil {
		j.stdin.Close()
		j.stdin = nil
	}
}

// tell writes msg to the standard error of the running job supervisor
// runs, and reports false when no running job has that supervisor.
func (js *jobs) tell(supervisor int, msg string) bool {
	for _, j := range js.list() {
		j.mu.Lock()
		ours := j.sup != nil && j.sup.pid == supervisor && j.ended.IsZero()
		j.mu.Unlock()
		if ours {
			_, _ = j.errs.Write([]byte("\n" + msg + "\n"))
			return true
		}
	}
	return false
}

// jobSignals are the signals job action=signal may send.
var jobSignals = map[string]unix.Signal{"TERM": unix.SIGTERM, "INT": unix.SIGINT, "HUP": unix.SIGHUP, "KILL": unix.SIGKILL}

// signalJob answers OpJobSignal: the signal reaches every process of the
// job's tree, and nothing else. TERM with a grace is followed by SIGKILL
// when the job has not ended within it. It waits up to a second (or the
// grace) for the job to end.
func (js *jobs) signalJob(args wire.JobSignalArgs) (*wire.JobInfo, *wire.Error) {
	j, werr := js.get(args.ID)
	if werr != nil {
		return nil, werr
	}
	sig, ok := jobSignals[args.Signal]
	if !ok {
		return nil, wire.Errorf(wire.CodeInvalid, "signal %q: must be TERM, INT, HUP or KILL", args.Signal)
	}
	j.mu.Lock()
	if j.sup == nil || !j.ended.IsZero() {
		j.mu.Unlock()
		in := js.jobInfo(j)
		return &in, nil // already ended: nothing to signal, the info says how it ended
	}
	sup := j.sup
	if sig == unix.SIGKILL {
		killDescendants(sup.pid, cleanupTimeout, nil)
		j.endedBy = "SIGKILL"
	} else {
		signalDescendants(sup.pid, sig)
		j.endedBy = "SIG" + args.Signal
	}
	j.mu.Unlock()
	wait := time.Second
	if sig == unix.SIGTERM && args.GraceMillis > 0 {
		wait = time.Duration(args.GraceMillis) * time.Millisecond
	}
	select {
	case <-j.done:
	case <-time.After(wait):
		if sig == unix.SIGTERM && args.GraceMillis > 0 {
			j.mu.Lock()
			if j.ended.IsZero() {
				killDescendants(sup.pid, cleanupTimeout, nil)
				j.endedBy = "SIGKILL"
			}
			j.mu.Unlock()
			<-j.done
		} else {
			j.mu.Lock()
			if j.ended.IsZero() {
				j.endedBy = "" // it survived the signal
			}
			j.mu.Unlock()
		}
	}
	in := js.jobInfo(j)
	return &in, nil
}

// stopAllJobs answers OpJobStopAll: every running job gets SIGTERM, then
// SIGKILL after the grace.
func (js *jobs) stopAllJobs(args wire.JobStopAllArgs) (*wire.JobListResult, *wire.Error) {
	var wg sync.WaitGroup
	for _, j := range js.list() {
		if j.kind == "job" && j.running() {
			wg.Go(func() {
				_, _ = js.signalJob(wire.JobSignalArgs{ID: j.id, Signal: "TERM", GraceMillis: max(args.GraceMillis, 1)})
			})
		}
	}
	wg.Wait()
	return js.listJobs(wire.JobListArgs{})
}

// listJobs answers OpJobList.
func (js *jobs) listJobs(args wire.JobListArgs) (*wire.JobListResult, *wire.Error) {
	res := &wire.JobListResult{Jobs: []wire.JobInfo{}}
	reports := map[fullDisks]*wire.DiskFull{} // the disks are looked at once per list
	for _, j := range js.list() {
		in := j.info()
		if args.Disk {
			in.DiskFull = js.jobDisks(j, reports)
		}
		res.Jobs = append(res.Jobs, in)
		if in.State == wire.JobRunning && j.kind == "job" {
			res.Running++
			if res.OldestRunningUnixMillis == 0 || in.StartedUnixMillis < res.OldestRunningUnixMillis {
				res.OldestRunningUnixMillis = in.StartedUnixMillis
			}
		}
	}
	return res, nil
}

// jobOutput answers OpJobOutput.
func (js *jobs) jobOutput(args wire.JobOutputArgs) (*wire.JobOutputResult, *wire.Error) {
	j, werr := js.get(args.ID)
	if werr != nil {
		return nil, werr
	}
	var s *spool
	switch args.Stream {
	case "stdout", "":
		s = j.out
	case "stderr":
		s = j.errs
	default:
		return nil, wire.Errorf(wire.CodeInvalid, "stream %q: must be stdout or stderr", args.Stream)
	}
	if args.Limit <= 0 || args.Offset < 0 || args.Line < 0 {
		return nil, wire.Errorf(wire.CodeBadRequest, "offset and line must not be negative, limit must be positive")
	}
	offset := args.Offset
	if args.Line > 0 {
		var err error
		if offset, err = s.lineOffset(args.Line); err != nil {
			return nil, wire.Errorf(wire.CodeInternal, "finding line %d: %v", args.Line, err)
		}
	}
	chunk, err := s.page(offset, args.Limit, args.Base64)
	if err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "reading the output: %v", err)
	}
	return &wire.JobOutputResult{Job: js.jobInfo(j), Chunk: chunk}, nil
}

// jobInput answers OpJobInput: it writes to the job's stdin, waiting at
// most inputTimeout for a job that does not read.
func (js *jobs) jobInput(args wire.JobInputArgs) (*wire.JobInputResult, *wire.Error) {
	j, werr := js.get(args.ID)
	if werr != nil {
		return nil, werr
	}
	j.mu.Lock()
	f := j.stdin
	j.mu.Unlock()
	if f == nil {
		return nil, wire.Errorf(wire.CodeInvalid, "job %s has no open stdin: it ended, its stdin was closed, or it is a foreground command's output", args.ID)
	}
	n := 0
	if args.Data != "" {
		_ = f.SetWriteDeadline(time.Now().Add(inputTimeout))
		var err error
		n, err = f.WriteString(args.Data)
		_ = f.SetWriteDeadline(time.Time{})
		if err != nil {
			return nil, wire.Errorf(wire.CodeInvalid, "wrote %d of %d bytes to job %s's stdin: %v (a job that does not read its input fills the pipe's 64 KiB; the rest was not written)",
				n, len(args.Data), args.ID, unwrapPath(err))
		}
	}
	if args.Close {
		j.closeStdin()
	}
	return &wire.JobInputResult{Job: js.jobInfo(j), Written: n}, nil
}

// inputTimeout bounds a write to a job's stdin.
const inputTimeout = 5 * time.Second

// jobStatus answers OpJobStatus.
func (js *jobs) jobStatus(args wire.JobArgs) (*wire.JobInfo, *wire.Error) {
	j, werr := js.get(args.ID)
	if werr != nil {
		return nil, werr
	}
	in := js.jobInfo(j)
	return &in, nil
}

// forgetJob answers OpJobForget: a finished job's record and kept output
// go, and with them the disk space the output took.
func (js *jobs) forgetJob(args wire.JobArgs) (*wire.JobInfo, *wire.Error) {
	j, werr := js.get(args.ID)
	if werr != nil {
		return nil, werr
	}
	if j.running() {
		return nil, wire.Errorf(wire.CodeInvalid, "job %s is still running: stop it first (job action=signal), then forget it", args.ID)
	}
	in := j.info()
	js.forget(j)
	return &in, nil
}

// forget drops a finished job's record and closes its output files.
func (js *jobs) forget(j *job) {
	js.mu.Lock()
	defer js.mu.Unlock()
	j.out.close()
	j.errs.close()
	delete(js.all, j.id)
	js.order = slices.DeleteFunc(js.order, func(id string) bool { return id == j.id })
}

// jobInfo describes j and, when it left a filesystem full, the state of
// the disks now.
func (js *jobs) jobInfo(j *job) wire.JobInfo {
	in := j.info()
	in.DiskFull = js.jobDisks(j, map[fullDisks]*wire.DiskFull{})
	return in
}

// jobDisks is the report of the disks j left full, nil for none, made
// once per fullDisks value in reports.
func (js *jobs) jobDisks(j *job, reports map[fullDisks]*wire.DiskFull) *wire.DiskFull {
	j.mu.Lock()
	full := j.full
	j.mu.Unlock()
	if _, made := reports[full]; !made {
		reports[full] = js.disks.report(full)
	}
	return reports[full]
}
