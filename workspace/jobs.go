package workspace

import (
	"time"

	"github.com/wink-mcp/wink-mcp/wire"
	"github.com/wink-mcp/wink-mcp/workspace/jobs"
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

// JobRequest starts a command in the background (jobs.Request).
type JobRequest = jobs.Request

// newJobs returns the session's background jobs (package jobs), each of
// whose tool calls is one of the session's (call).
func (s *Session) newJobs() *jobs.Part {
	return jobs.New(jobs.Deps{Call: s.call, CommandDir: s.commandDir, MaxAge: s.m.cfg.MaxJobAge, StopGrace: s.m.cfg.StopGrace,
		Log: s.m.log, Session: s.who.hash})
}
