package tools

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/display"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// The job tool's actions.
const (
	JobList   = "list"
	JobStatus = "status"
	JobOutput = "output"
	JobSignal = "signal"
	JobInput  = "input"
	JobForget = "forget"
)

// Limits of the job tool.
const (
	// DefaultJobPage is how many bytes action output returns by default.
	DefaultJobPage = 32 << 10
	// MaxJobPage is the most action output returns at once.
	MaxJobPage = 1 << 20
	// MaxJobInput bounds one write to a job's stdin.
	MaxJobInput = 48000
)

// JobParams are the job tool's arguments.
type JobParams struct {
	Action       string `json:"action" jsonschema:"enum=list,enum=status,enum=output,enum=signal,enum=input,enum=forget" jsonschema_description:"list: every job and kept output; status: one job's state, exit code, duration and byte counts; output: a page of its stdout or stderr; signal: send TERM, INT, HUP or KILL to its whole process tree; input: write to its stdin; forget: drop a finished job and its kept output, freeing the workspace disk it takes."`
	ID           string `json:"id,omitempty" jsonschema:"maxLength=64" jsonschema_description:"The job id, from podman_shell (job, or output_job for a truncated output). Required except for list."`
	Stream       string `json:"stream,omitempty" jsonschema:"enum=stdout,enum=stderr,default=stdout" jsonschema_description:"output: which stream."`
	Offset       int64  `json:"offset,omitempty" jsonschema:"minimum=0" jsonschema_description:"output: the byte to start at; the result's next is where the following page starts."`
	Line         int64  `json:"line,omitempty" jsonschema:"minimum=0" jsonschema_description:"output: start at this line (0-based) instead of offset."`
	Limit        int    `json:"limit,omitempty" jsonschema:"minimum=1,maximum=1048576,default=32768" jsonschema_description:"output: the most bytes to return."`
	Encoding     string `json:"encoding,omitempty" jsonschema:"enum=text,enum=base64,default=text" jsonschema_description:"output: text (UTF-8; invalid bytes show as U+FFFD, a character cut by the limit waits for the next page) or base64 (the exact bytes)."`
	Signal       string `json:"signal,omitempty" jsonschema:"enum=TERM,enum=INT,enum=HUP,enum=KILL" jsonschema_description:"signal: which signal. TERM is followed by KILL after grace_seconds when the job has not ended."`
	GraceSeconds *int   `json:"grace_seconds,omitempty" jsonschema:"minimum=0,maximum=30,default=2" jsonschema_description:"signal TERM: seconds before KILL; 0 sends TERM only."`
	Input        string `json:"input,omitempty" jsonschema:"maxLength=48000" jsonschema_description:"input: text written to the job's stdin. Never logged."`
	CloseStdin   bool   `json:"close_stdin,omitempty" jsonschema_description:"input: close the job's stdin after writing (programs that read to the end of their input need it)."`
}

// Validate checks which arguments each action takes.
func (p *JobParams) Validate() error {
	if p.Action == JobList {
		if p.ID != "" {
			return fmt.Errorf("id: list takes no id")
		}
		return nil
	}
	if strings.TrimSpace(p.ID) == "" {
		return fmt.Errorf("id: is required when action is %s (job action=list shows the ids)", p.Action)
	}
	type arg struct {
		name  string
		set   bool
		allow string
	}
	for _, a := range []arg{
		{"stream", p.Stream != "", JobOutput}, {"offset", p.Offset != 0, JobOutput}, {"line", p.Line != 0, JobOutput},
		{"limit", p.Limit != 0, JobOutput}, {"encoding", p.Encoding != "", JobOutput},
		{"signal", p.Signal != "", JobSignal}, {"grace_seconds", p.GraceSeconds != nil, JobSignal},
		{"input", p.Input != "", JobInput}, {"close_stdin", p.CloseStdin, JobInput},
	} {
		if a.set && p.Action != a.allow {
			return fmt.Errorf("%s: only for action %s (this call is action %s)", a.name, a.allow, p.Action)
		}
	}
	switch {
	case p.Action == JobOutput && p.Offset != 0 && p.Line != 0:
		return fmt.Errorf("offset and line: give one of them, not both")
	case p.Action == JobSignal && p.Signal == "":
		return fmt.Errorf("signal: is required when action is signal (TERM, INT, HUP or KILL)")
	case p.Action == JobSignal && p.GraceSeconds != nil && p.Signal != "TERM":
		return fmt.Errorf("grace_seconds: only with signal TERM")
	case p.Action == JobInput && p.Input == "" && !p.CloseStdin:
		return fmt.Errorf("input: is required when action is input, unless close_stdin is true")
	}
	return nil
}

// JobView describes a job as the tool shows it.
type JobView struct {
	ID            string   `json:"id" jsonschema_description:"The job id."`
	Kind          string   `json:"kind" jsonschema_description:"job (a background command) or command (the kept output of a foreground one)."`
	Command       []string `json:"command" jsonschema_description:"Its argv."`
	State         string   `json:"state" jsonschema_description:"running or exited."`
	ExitCode      *int     `json:"exit_code,omitempty" jsonschema_description:"Once exited: its status; 128+N when killed by signal N; 124 when its timeout passed."`
	EndedBy       string   `json:"ended_by,omitempty" jsonschema_description:"The signal that ended it, when one was sent."`
	DurationMS    int64    `json:"duration_ms" jsonschema_description:"How long it has run, or ran."`
	StdoutBytes   int64    `json:"stdout_bytes" jsonschema_description:"Bytes it wrote to stdout so far."`
	StderrBytes   int64    `json:"stderr_bytes" jsonschema_description:"Bytes it wrote to stderr so far."`
	DroppedBytes  int64    `json:"dropped_bytes,omitempty" jsonschema_description:"Output that could not be kept because the workspace disk was full."`
	DroppedReason string   `json:"dropped_reason,omitempty" jsonschema_description:"Why output was dropped."`
	StdinOpen     bool     `json:"stdin_open" jsonschema_description:"Whether action input can still write to it."`
	OutOfMemory   string   `json:"out_of_memory,omitempty" jsonschema_description:"Once exited: set when the workspace's memory limit killed processes while it ran: whether the job itself was killed (exit_code 137), how many, and the limit."`
	DiskFull      string   `json:"disk_full,omitempty" jsonschema_description:"Once exited: set when it left the workspace's disk or /tmp full (no space, or no inode): what takes the space now and which call frees it, or that it has been freed since."`
}

// JobResult is the job tool's result.
type JobResult struct {
	Action  string    `json:"action" jsonschema_description:"The action performed."`
	Job     *JobView  `json:"job,omitempty" jsonschema_description:"The job, after the action."`
	Jobs    []JobView `json:"jobs,omitempty" jsonschema_description:"list: every job and kept output, oldest first."`
	Stream  string    `json:"stream,omitempty" jsonschema_description:"output: the stream read."`
	Data    string    `json:"data,omitempty" jsonschema_description:"output: the page, as text or base64."`
	Offset  int64     `json:"offset,omitempty" jsonschema_description:"output: the byte the page starts at."`
	Next    int64     `json:"next,omitempty" jsonschema_description:"output: the offset of the next page; equal to total when the page reached the end so far."`
	Total   int64     `json:"total,omitempty" jsonschema_description:"output: the stream's size so far."`
	Written int       `json:"written,omitempty" jsonschema_description:"input: bytes written to stdin."`
}

// Text renders the result.
func (r JobResult) Text() string {
	var b strings.Builder
	if r.Action == JobList {
		if len(r.Jobs) == 0 {
			return "no jobs"
		}
		var notes []string
		for _, j := range r.Jobs {
			b.WriteString(j.line() + "\n")
			if j.DiskFull != "" && !slices.Contains(notes, j.DiskFull) {
				notes = append(notes, j.DiskFull)
			}
		}
		for _, n := range notes { // the same disks: said once, not per job
			b.WriteString("disk full: " + n + "\n")
		}
		return strings.TrimSuffix(b.String(), "\n")
	}
	if r.Job != nil {
		b.WriteString(r.Job.line())
		if r.Job.DiskFull != "" {
			b.WriteString("\ndisk full: " + r.Job.DiskFull)
		}
	}
	switch r.Action {
	case JobOutput:
		more := "the end so far"
		if r.Next < r.Total {
			more = fmt.Sprintf("more from offset %d", r.Next)
		}
		fmt.Fprintf(&b, "\n--- %s bytes %d-%d of %d (%s) ---\n%s", r.Stream, r.Offset, r.Next, r.Total, more, r.Data)
	case JobInput:
		fmt.Fprintf(&b, "\nwrote %d bytes to its stdin", r.Written)
	case JobForget:
		b.WriteString("\nforgotten: its kept output is gone, and the disk it took is free")
	}
	return b.String()
}

// line is one line about a job.
func (v JobView) line() string {
	state := v.State
	if v.ExitCode != nil {
		state = fmt.Sprintf("exited %d", *v.ExitCode)
	}
	if v.EndedBy != "" {
		state += " (" + v.EndedBy + ")"
	}
	if v.OutOfMemory != "" {
		state += ": " + v.OutOfMemory + ","
	}
	s := fmt.Sprintf("%s %s: %s after %d ms, stdout %d bytes, stderr %d bytes: %s", v.Kind, v.ID, state, v.DurationMS, v.StdoutBytes, v.StderrBytes, display.Texts(v.Command, " "))
	if v.DroppedBytes > 0 {
		s += fmt.Sprintf(" [%d bytes of output dropped: %s]", v.DroppedBytes, v.DroppedReason)
	}
	return s
}

func jobView(in workspace.JobInfo) *JobView {
	return &JobView{ID: in.ID, Kind: in.Kind, Command: in.Argv, State: in.State, ExitCode: in.ExitCode, EndedBy: in.EndedBy,
		DurationMS: in.DurationMillis, StdoutBytes: in.StdoutBytes, StderrBytes: in.StderrBytes,
		DroppedBytes: in.DroppedBytes, DroppedReason: in.DroppedReason, StdinOpen: in.StdinOpen, OutOfMemory: oomNote(in.OOM),
		DiskFull: workspace.DiskFullNote(in.DiskFull, "the "+in.Kind)}
}

// JobControl is what the job tool takes of a session's workspace: the
// background jobs podman_shell started (see JobStarter).
type JobControl interface {
	// JobStatus describes a job.
	JobStatus(ctx context.Context, id string) (workspace.JobInfo, error)
	// JobOutput returns a page of a job's output.
	JobOutput(ctx context.Context, req workspace.JobOutputRequest) (workspace.JobOutput, error)
	// SignalJob signals a job's whole process tree; TERM with a grace is
	// followed by SIGKILL when the job has not ended within it.
	SignalJob(ctx context.Context, id, signal string, grace time.Duration) (workspace.JobInfo, error)
	// WriteJobInput writes to a job's stdin and, with closeStdin, closes it.
	WriteJobInput(ctx context.Context, id, data string, closeStdin bool) (workspace.JobInput, error)
	// Jobs lists the container's jobs and kept outputs.
	Jobs(ctx context.Context) (workspace.JobList, error)
	// ForgetJob forgets a finished job, freeing the disk its kept output
	// takes, and returns how it was.
	ForgetJob(ctx context.Context, id string) (workspace.JobInfo, error)
}

// Job returns the job tool.
func Job(workspaceFor WorkspaceFor) (server.ServerTool, error) {
	return build(workspaceFor, definition[JobControl, JobParams, JobResult]{
		name:  "job",
		title: "Follow a background job",
		description: "Follow the background jobs podman_shell started (background=true) and the kept outputs of truncated commands " +
			"(output_job). action=list shows them all; status gives one job's state, exit code, duration and output sizes; output " +
			"pages stdout or stderr from a byte offset or a line (at most 1 MiB a page, 32 KiB by default; the whole output is kept, " +
			"so nothing is lost to truncation); signal sends TERM (then KILL after grace_seconds), INT, HUP or KILL to everything " +
			"the job started and nothing else; input writes to its stdin (close_stdin ends it); forget drops a finished job and the " +
			"kept output that takes the workspace's disk. Up to 16 jobs run at once; the 32 most recent finished ones are kept. " +
			"Jobs end with the session (unless its container is handed over with workspace_handoff), with a restore " +
			"(workspace_restore), a profile switch with restart and action=stop, and do not survive the container being recreated. " +
			"A container idle past the server's timeout is kept while jobs run, for a time the server sets (2 hours by default).",
		annotations: annotate(false, true, false),
		handle:      runJob,
	})
}

func runJob(ctx context.Context, ws JobControl, p JobParams) (JobResult, error) {
	res := JobResult{Action: p.Action}
	switch p.Action {
	case JobList:
		list, err := ws.Jobs(ctx)
		if err != nil {
			return res, err
		}
		res.Jobs = make([]JobView, 0, len(list.Jobs))
		for _, j := range list.Jobs {
			res.Jobs = append(res.Jobs, *jobView(j))
		}
		return res, nil
	case JobStatus:
		in, err := ws.JobStatus(ctx, p.ID)
		res.Job = jobView(in)
		return res, err
	case JobOutput:
		limit := p.Limit
		if limit == 0 {
			limit = DefaultJobPage
		}
		res.Stream = p.Stream
		if res.Stream == "" {
			res.Stream = "stdout"
		}
		out, err := ws.JobOutput(ctx, workspace.JobOutputRequest{ID: p.ID, Stream: res.Stream, Offset: p.Offset, Line: p.Line, Limit: limit, Base64: p.Encoding == "base64"})
		if err != nil {
			return res, err
		}
		res.Job = jobView(out.Job)
		res.Data, res.Offset, res.Next, res.Total = out.Chunk.Data, out.Chunk.Offset, out.Chunk.Next, out.Chunk.Total
		return res, nil
	case JobSignal:
		grace := DefaultGraceSeconds
		if p.GraceSeconds != nil {
			grace = *p.GraceSeconds
		}
		if p.Signal != "TERM" {
			grace = 0
		}
		in, err := ws.SignalJob(ctx, p.ID, p.Signal, time.Duration(grace)*time.Second)
		res.Job = jobView(in)
		return res, err
	case JobForget:
		in, err := ws.ForgetJob(ctx, p.ID)
		res.Job = jobView(in)
		return res, err
	}
	in, err := ws.WriteJobInput(ctx, p.ID, p.Input, p.CloseStdin)
	res.Job, res.Written = jobView(in.Job), in.Written
	return res, err
}
