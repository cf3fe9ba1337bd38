// Package jobs is the part of a session's workspace that starts and
// follows background jobs in its container (tools.JobStarter and
// tools.JobControl), and asks the agent about them when the container is
// idle or goes: whether running jobs keep it, and to stop them first.
//
// A Part reaches its session only through its Deps, never by importing
// workspace. It takes no lock of its own (whether a job was started is
// one atomic flag): a tool's call goes through the session's (Deps.Call),
// and what the session asks while it holds its own lock goes on the
// channel it passes.
package jobs

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/wink-mcp/wink-mcp/wire"
)

// Request starts a command in the background. Timeout, when positive,
// bounds its life; Stdin is written first and stdin stays open for
// WriteJobInput.
type Request struct {
	Argv    []string
	Dir     string
	Env     map[string]string
	Stdin   string
	Timeout time.Duration
	Grace   time.Duration
	// Wait is how long to wait for the job's first output.
	Wait time.Duration
}

// Deps is what a Part needs of its session.
type Deps struct {
	// Call sends one request to the agent, starting the container first if
	// needed, as a call of the session's.
	Call func(ctx context.Context, op string, args, result any, progress func(wire.Progress)) error
	// CommandDir is where a command runs that names dir ("" for the
	// profile's working directory).
	CommandDir func(dir string) string
	// MaxAge is how long running jobs keep an idle container (0: for as
	// long as they run); StopGrace is how long a job stopped with its
	// container has between SIGTERM and SIGKILL.
	MaxAge, StopGrace time.Duration
	// Log receives what the agent did not answer.
	Log *slog.Logger
	// Session is what logs call the session now.
	Session func() string
}

// Part is a session's background jobs. It is safe for concurrent use.
type Part struct {
	d Deps
	// started says a job was started in the current container, so its
	// end and its idle clean-up ask the agent about running jobs.
	started atomic.Bool
}

// New returns a session's jobs, none started yet.
func New(d Deps) *Part { return &Part{d: d} }

// StartJob runs a command in the background and returns at once with its
// ID and first output.
func (p *Part) StartJob(ctx context.Context, req Request) (wire.JobStartResult, error) {
	var res wire.JobStartResult
	p.started.Store(true)
	err := p.d.Call(ctx, wire.OpJobStart, wire.JobStartArgs{
		Exec: wire.ExecArgs{Argv: req.Argv, Dir: p.d.CommandDir(req.Dir), Env: req.Env, Stdin: req.Stdin,
			TimeoutMillis: req.Timeout.Milliseconds(), GraceMillis: req.Grace.Milliseconds()},
		WaitMillis: req.Wait.Milliseconds(),
	}, &res, nil)
	return res, err
}

// JobStatus describes a job.
func (p *Part) JobStatus(ctx context.Context, id string) (wire.JobInfo, error) {
	var res wire.JobInfo
	err := p.d.Call(ctx, wire.OpJobStatus, wire.JobArgs{ID: id}, &res, nil)
	return res, err
}

// JobOutput returns a page of a job's output.
func (p *Part) JobOutput(ctx context.Context, req wire.JobOutputArgs) (wire.JobOutputResult, error) {
	var res wire.JobOutputResult
	err := p.d.Call(ctx, wire.OpJobOutput, req, &res, nil)
	return res, err
}

// SignalJob signals a job's whole process tree; TERM with a grace is
// followed by SIGKILL when the job has not ended within it.
func (p *Part) SignalJob(ctx context.Context, id, signal string, grace time.Duration) (wire.JobInfo, error) {
	var res wire.JobInfo
	err := p.d.Call(ctx, wire.OpJobSignal, wire.JobSignalArgs{ID: id, Signal: signal, GraceMillis: grace.Milliseconds()}, &res, nil)
	return res, err
}

// WriteJobInput writes to a job's stdin and, with closeStdin, closes it.
func (p *Part) WriteJobInput(ctx context.Context, id, data string, closeStdin bool) (wire.JobInputResult, error) {
	var res wire.JobInputResult
	err := p.d.Call(ctx, wire.OpJobInput, wire.JobInputArgs{ID: id, Data: data, Close: closeStdin}, &res, nil)
	return res, err
}

// ForgetJob forgets a finished job, freeing the disk its kept output
// takes, and returns how it was.
func (p *Part) ForgetJob(ctx context.Context, id string) (wire.JobInfo, error) {
	var res wire.JobInfo
	err := p.d.Call(ctx, wire.OpJobForget, wire.JobArgs{ID: id}, &res, nil)
	return res, err
}

// Jobs lists the container's jobs and kept outputs.
func (p *Part) Jobs(ctx context.Context) (wire.JobListResult, error) {
	var res wire.JobListResult
	err := p.d.Call(ctx, wire.OpJobList, wire.JobListArgs{Disk: true}, &res, nil)
	return res, err
}

// Query reports whether op only reads or drops what the agent keeps of
// jobs, touching no file in /workspace.
func Query(op string) bool {
	switch op {
	case wire.OpJobStatus, wire.OpJobOutput, wire.OpJobSignal, wire.OpJobInput, wire.OpJobList, wire.OpJobForget:
		return true
	}
	return false
}

// Started says a job was started in the current container.
func (p *Part) Started() bool { return p.started.Load() }

// Adopted records that the container was adopted from another server
// (workspace.EventAdopted), whose jobs may still run in it.
func (p *Part) Adopted() { p.started.Store(true) }

// ContainerGone records that the container went, and its jobs with it.
func (p *Part) ContainerGone() { p.started.Store(false) }

// KeepIdle reports whether running jobs keep an idle container: they do
// until the oldest has run Deps.MaxAge. An agent that does not answer on
// client, the session's open channel, keeps nothing. The caller holds
// the session's lock.
func (p *Part) KeepIdle(ctx context.Context, client *wire.Client) bool {
	list, ok := p.List(ctx, client, 5*time.Second)
	if !ok || list.Running == 0 {
		return false
	}
	age := time.Since(time.UnixMilli(list.OldestRunningUnixMillis))
	return p.d.MaxAge == 0 || age < p.d.MaxAge
}

// StopAll gives a container's running jobs SIGTERM and the stop grace
// before the container goes, on client, the session's open channel. The
// caller holds the session's lock.
func (p *Part) StopAll(ctx context.Context, client *wire.Client) {
	p.ask(ctx, client, p.d.StopGrace+3*time.Second, wire.OpJobStopAll, wire.JobStopAllArgs{GraceMillis: p.d.StopGrace.Milliseconds()})
}

// List lists the container's jobs on client, the session's open channel,
// within timeout, when a job was started in this container; ok is false
// when none was, or the agent did not answer. The caller holds the
// session's lock (a tool's call would take it again).
func (p *Part) List(ctx context.Context, client *wire.Client, timeout time.Duration) (list wire.JobListResult, ok bool) {
	return p.ask(ctx, client, timeout, wire.OpJobList, struct{}{})
}

// ask sends a job operation that answers with the job list on client
// (nil when no channel is open), within timeout, when a job was started
// in this container; ok is false when none was, or the agent did not
// answer.
func (p *Part) ask(ctx context.Context, client *wire.Client, timeout time.Duration, op string, args any) (list wire.JobListResult, ok bool) {
	if !p.started.Load() || client == nil {
		return list, false
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := client.Call(ctx, op, args, &list); err != nil {
		p.d.Log.Debug("asking the agent about the session's jobs", "session", p.d.Session(), "op", op, "err", err)
		return list, false
	}
	return list, true
}
