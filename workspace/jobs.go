package workspace

import (
	"context"
	"time"

	"github.com/wink-mcp/wink-mcp/wire"
)

// MaxGrace bounds the time between SIGTERM and SIGKILL a call may ask for.
const MaxGrace = 30 * time.Second

// Job types, as the agent reports them.
type (
	// JobInfo describes a background job or a kept foreground output.
	JobInfo = wire.JobInfo
	// JobStart is a started job and its first output.
	JobStart = wire.JobStartResult
	// JobOutput is a page of a job's output.
	JobOutput = wire.JobOutputResult
	// JobInput is what a write to a job's stdin did.
	JobInput = wire.JobInputResult
	// JobList lists a container's jobs.
	JobList = wire.JobListResult
	// JobOutputRequest asks for a page of a job's output.
	JobOutputRequest = wire.JobOutputArgs
)

// JobRequest starts a command in the background. Timeout, when positive,
// bounds its life; Stdin is written first and stdin stays open for
// JobInput.
type JobRequest struct {
	Argv    []string
	Dir     string
	Env     map[string]string
	Stdin   string
	Timeout time.Duration
	Grace   time.Duration
	// Wait is how long to wait for the job's first output.
	Wait time.Duration
}

// StartJob runs a command in the background and returns at once with its
// ID and first output.
func (s *Session) StartJob(ctx context.Context, req JobRequest) (JobStart, error) {
	var res JobStart
	s.jobsStarted.Store(true)
	err := s.call(ctx, wire.OpJobStart, wire.JobStartArgs{
		Exec: wire.ExecArgs{Argv: req.Argv, Dir: s.commandDir(req.Dir), Env: req.Env, Stdin: req.Stdin,
			TimeoutMillis: req.Timeout.Milliseconds(), GraceMillis: req.Grace.Milliseconds()},
		WaitMillis: req.Wait.Milliseconds(),
	}, &res, nil)
	return res, err
}

// JobStatus describes a job.
func (s *Session) JobStatus(ctx context.Context, id string) (JobInfo, error) {
	var res JobInfo
	err := s.call(ctx, wire.OpJobStatus, wire.JobArgs{ID: id}, &res, nil)
	return res, err
}

// JobOutput returns a page of a job's output.
func (s *Session) JobOutput(ctx context.Context, req JobOutputRequest) (JobOutput, error) {
	var res JobOutput
	err := s.call(ctx, wire.OpJobOutput, req, &res, nil)
	return res, err
}

// SignalJob signals a job's whole process tree; TERM with a grace is
// followed by SIGKILL when the job has not ended within it.
func (s *Session) SignalJob(ctx context.Context, id, signal string, grace time.Duration) (JobInfo, error) {
	var res JobInfo
	err := s.call(ctx, wire.OpJobSignal, wire.JobSignalArgs{ID: id, Signal: signal, GraceMillis: grace.Milliseconds()}, &res, nil)
	return res, err
}

// WriteJobInput writes to a job's stdin and, with closeStdin, closes it.
func (s *Session) WriteJobInput(ctx context.Context, id, data string, closeStdin bool) (JobInput, error) {
	var res JobInput
	err := s.call(ctx, wire.OpJobInput, wire.JobInputArgs{ID: id, Data: data, Close: closeStdin}, &res, nil)
	return res, err
}

// ForgetJob forgets a finished job, freeing the disk its kept output
// takes, and returns how it was.
func (s *Session) ForgetJob(ctx context.Context, id string) (JobInfo, error) {
	var res JobInfo
	err := s.call(ctx, wire.OpJobForget, wire.JobArgs{ID: id}, &res, nil)
	return res, err
}

// jobQuery reports whether op only reads or drops what the agent keeps of
// jobs, touching no file in /workspace.
func jobQuery(op string) bool {
	switch op {
	case wire.OpJobStatus, wire.OpJobOutput, wire.OpJobSignal, wire.OpJobInput, wire.OpJobList, wire.OpJobForget:
		return true
	}
	return false
}

// Jobs lists the container's jobs and kept outputs.
func (s *Session) Jobs(ctx context.Context) (JobList, error) {
	var res JobList
	err := s.call(ctx, wire.OpJobList, wire.JobListArgs{Disk: true}, &res, nil)
	return res, err
}

// jobsKeepLocked reports whether running jobs keep an idle container: they
// do until the oldest has run MaxJobAge. An agent that does not answer
// keeps nothing. The caller holds s.mu.
func (s *Session) jobsKeepLocked(ctx context.Context) bool {
	list, ok := s.askJobsLocked(ctx, 5*time.Second, wire.OpJobList, struct{}{})
	if !ok || list.Running == 0 {
		return false
	}
	age := time.Since(time.UnixMilli(list.OldestRunningUnixMillis))
	return s.m.cfg.MaxJobAge == 0 || age < s.m.cfg.MaxJobAge
}

// stopJobsLocked gives a container's running jobs SIGTERM and the stop
// grace before the container goes. The caller holds s.mu.
func (s *Session) stopJobsLocked(ctx context.Context) {
	s.askJobsLocked(ctx, s.m.cfg.StopGrace+3*time.Second, wire.OpJobStopAll, wire.JobStopAllArgs{GraceMillis: s.m.cfg.StopGrace.Milliseconds()})
}

// askJobsLocked sends a job operation that answers with the job list on
// the open channel, within timeout, when a job was started in this
// container; ok is false when none was, or the agent did not answer. The
// caller holds s.mu (s.call would take it again).
func (s *Session) askJobsLocked(ctx context.Context, timeout time.Duration, op string, args any) (list JobList, ok bool) {
	if !s.jobsStarted.Load() || s.client == nil {
		return list, false
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := s.client.Call(ctx, op, args, &list); err != nil {
		s.m.log.Debug("asking the agent about the session's jobs", "session", s.hash(), "op", op, "err", err)
		return list, false
	}
	return list, true
}
