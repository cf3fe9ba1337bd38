package wire

// Job operations: a command started in the background runs under its own
// supervisor until it exits or is signalled; its output is kept whole in
// files the agent holds, and paged back. A foreground command whose output
// was truncated leaves a finished job record with its whole output.
const (
	OpJobStart  = "job_start"
	OpJobStatus = "job_status"
	OpJobOutput = "job_output"
	OpJobSignal = "job_signal"
	OpJobInput  = "job_input"
	OpJobList   = "job_list"
	// OpJobStopAll stops every running job (SIGTERM, then SIGKILL after
	// the grace), before the container is removed.
	OpJobStopAll = "job_stop_all"
	// OpJobForget forgets a finished job (JobArgs), freeing the disk its
	// kept output takes; it answers with the job's last JobInfo.
	OpJobForget = "job_forget"
)

// Job states.
const (
	JobRunning = "running"
	JobExited  = "exited"
)

// JobStartArgs are the arguments of OpJobStart. Exec.TimeoutMillis, when
// positive, bounds the job's life; Exec.Stdin, when set, is written first
// and stdin stays open for OpJobInput unless CloseStdin.
type JobStartArgs struct {
	Exec ExecArgs `json:"exec"`
	// WaitMillis is how long to wait for the job's first output (or its end)
	// before answering.
	WaitMillis int64 `json:"wait_ms"`
	CloseStdin bool  `json:"close_stdin,omitempty"`
}

// JobArgs name a job.
type JobArgs struct {
	ID string `json:"id"`
}

// JobInfo describes a job.
type JobInfo struct {
	ID   string   `json:"id"`
	Argv []string `json:"argv"`
	// Dir is the absolute working directory.
	Dir string `json:"dir"`
	// Kind is "job" for a background command, "command" for the kept
	// output of a foreground one.
	Kind  string `json:"kind"`
	State string `json:"state"`
	// ExitCode is set once the job exited (128+N when killed by signal N,
	// 124 when its timeout passed).
	ExitCode *int `json:"exit_code,omitempty"`
	// EndedBy names the signal the agent sent that ended it, if any.
	EndedBy           string `json:"ended_by,omitempty"`
	StartedUnixMillis int64  `json:"started_unix_ms"`
	DurationMillis    int64  `json:"duration_ms"`
	StdoutBytes       int64  `json:"stdout_bytes"`
	StderrBytes       int64  `json:"stderr_bytes"`
	// DroppedBytes counts output that could not be kept (the disk was
	// full); DroppedReason says why.
	DroppedBytes  int64  `json:"dropped_bytes,omitempty"`
	DroppedReason string `json:"dropped_reason,omitempty"`
	StdinOpen     bool   `json:"stdin_open,omitempty"`
	// OOM, once it exited, says the container's memory limit killed
	// processes while it ran.
	OOM *OOM `json:"oom,omitempty"`
	// DiskFull, once it exited, says it left a filesystem it writes to
	// full (see ExecResult.DiskFull), with their state as it is asked for.
	DiskFull *DiskFull `json:"disk_full,omitempty"`
}

// JobStartResult answers OpJobStart: the job, and the output that came
// within the wait.
type JobStartResult struct {
	Job    JobInfo  `json:"job"`
	Stdout JobChunk `json:"stdout"`
	Stderr JobChunk `json:"stderr"`
}

// JobOutputArgs are the arguments of OpJobOutput. Line, when positive,
// starts at that line (0-based) instead of Offset.
type JobOutputArgs struct {
	ID     string `json:"id"`
	Stream string `json:"stream"`
	Offset int64  `json:"offset"`
	Line   int64  `json:"line,omitempty"`
	Limit  int    `json:"limit"`
	Base64 bool   `json:"base64,omitempty"`
}

// JobChunk is a page of one output stream.
type JobChunk struct {
	// Data is the bytes from Offset, as UTF-8 text (invalid bytes become
	// U+FFFD, a character cut by the limit is left for the next page) or
	// base64.
	Data   string `json:"data"`
	Offset int64  `json:"offset"`
	// Next is the offset of the byte after the page.
	Next int64 `json:"next"`
	// Total is the stream's size so far.
	Total int64 `json:"total"`
}

// JobOutputResult answers OpJobOutput.
type JobOutputResult struct {
	Job   JobInfo  `json:"job"`
	Chunk JobChunk `json:"chunk"`
}

// JobSignalArgs are the arguments of OpJobSignal.
type JobSignalArgs struct {
	ID     string `json:"id"`
	Signal string `json:"signal"`
	// GraceMillis, for TERM, is how long the tree has before SIGKILL; zero
	// sends TERM only.
	GraceMillis int64 `json:"grace_ms,omitempty"`
}

// JobInputArgs are the arguments of OpJobInput.
type JobInputArgs struct {
	ID    string `json:"id"`
	Data  string `json:"data"`
	Close bool   `json:"close,omitempty"`
}

// JobInputResult answers OpJobInput.
type JobInputResult struct {
	Job     JobInfo `json:"job"`
	Written int     `json:"written"`
}

// JobListArgs are the arguments of OpJobList. Disk asks for the state of
// the disks a finished job left full (JobInfo.DiskFull), which the
// server's own looks at the jobs do not need.
type JobListArgs struct {
	Disk bool `json:"disk,omitempty"`
}

// JobListResult answers OpJobList.
type JobListResult struct {
	Jobs []JobInfo `json:"jobs"`
	// Running counts the running jobs; OldestRunningUnixMillis is when the
	// oldest of them started.
	Running                 int   `json:"running"`
	OldestRunningUnixMillis int64 `json:"oldest_running_unix_ms,omitempty"`
}

// JobStopAllArgs are the arguments of OpJobStopAll.
type JobStopAllArgs struct {
	GraceMillis int64 `json:"grace_ms"`
}
