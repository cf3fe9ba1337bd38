package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/invopop/jsonschema"
	"github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/schema"
	"github.com/wink-mcp/wink-mcp/workspace"
	"github.com/wink-mcp/wink-mcp/wspath"
)

// Limits of podman_shell that no schema keyword states; the others are in
// ShellParams' tags and JSONSchemaExtend.
const (
	// MaxCommandBytes bounds the bytes of all of command's arguments together.
	MaxCommandBytes = 4096
	// MaxOutputBytes is how much of each output stream a result keeps.
	MaxOutputBytes = 32 << 10
	// TruncatedMarker ends an output stream that was cut.
	TruncatedMarker = "[truncated]"
	// NotCapturedNote replaces the output when capture_output is false.
	NotCapturedNote = "[not captured: capture_output was false]"
	// logPreviewChars is how much of each stream the log records.
	logPreviewChars = 200
	defaultTimeout  = 30
	// DefaultMaxCommandTimeout is the default ceiling of timeout_seconds.
	DefaultMaxCommandTimeout = 30 * time.Minute
	// DefaultGraceSeconds is the default time between SIGTERM and SIGKILL.
	DefaultGraceSeconds = 2
	// jobFirstOutputWait is how long a background start waits for the
	// job's first output.
	jobFirstOutputWait = 2 * time.Second
)

// Shell actions.
const (
	ActionExec  = "exec"
	ActionStart = "start"
	ActionStop  = "stop"
)

// ShellParams are podman_shell's arguments.
type ShellParams struct {
	Command        []string          `json:"command,omitempty" jsonschema:"minItems=1,maxItems=512,pattern=^[\\x01-\\x7F]*$" jsonschema_description:"The command as an argv array; the first element is the executable, looked up in PATH. Not a shell string: use [\"sh\", \"-c\", \"...\"] for pipes, globs and redirection. ASCII, at most 4096 bytes in all. Required when action is exec."`
	Cwd            string            `json:"cwd,omitempty" jsonschema:"maxLength=1295" jsonschema_description:"Working directory relative to /workspace (default: /workspace itself). Must be an existing directory inside it."`
	Env            map[string]string `json:"env,omitempty" jsonschema_description:"Environment variables set for the command, over the container's own. Keys are uppercased; at most 64 entries; ASCII values of at most 512 characters."`
	Stdin          string            `json:"stdin,omitempty" jsonschema:"maxLength=48000" jsonschema_description:"Text piped to the command's standard input, at most 48000 characters. Never logged."`
	TimeoutSeconds int               `json:"timeout_seconds,omitempty" jsonschema:"minimum=1,default=30" jsonschema_description:"Seconds before the command and every process it started are stopped (exit_code 124, timed_out true): SIGTERM, then SIGKILL after grace_seconds. With background, bounds the job's life (default: none)."`
	GraceSeconds   *int              `json:"grace_seconds,omitempty" jsonschema:"minimum=0,maximum=30,default=2" jsonschema_description:"Seconds between SIGTERM and SIGKILL when the timeout passes or the call is cancelled; 0 kills at once. ended_by says which signal ended the command."`
	Background     bool              `json:"background,omitempty" jsonschema_description:"Start the command as a background job and return at once with its id and the output of its first 2 seconds; see the job tool for its status, output, signals and input. Its stdin stays open for job input. Jobs end when they exit, are signalled or the session ends (a workspace handed over with its container keeps them); workspace_port shows a server a job runs to the user."`
	CaptureOutput  *bool             `json:"capture_output,omitempty" jsonschema:"default=true" jsonschema_description:"Return stdout and stderr (default true). When false they only say that capture was off; the byte counts are still reported."`
	Action         string            `json:"action,omitempty" jsonschema:"enum=exec,enum=start,enum=stop,default=exec" jsonschema_description:"exec runs the command; start makes sure the container runs and returns its name; stop removes the container and deletes the files in /workspace, including the changes made to mounted host folders (the host copies are untouched), so the next call starts fresh."`
}

// JSONSchemaExtend states the env limits no struct tag can express.
func (ShellParams) JSONSchemaExtend(s *jsonschema.Schema) {
	env, ok := s.Properties.Get("env")
	if !ok {
		return
	}
	env.MaxProperties = uintPtr(64)
	env.PropertyNames = &jsonschema.Schema{Pattern: schema.EnvName, MaxLength: uintPtr(128)}
	env.AdditionalProperties = &jsonschema.Schema{Type: "string", MaxLength: uintPtr(512), Pattern: schema.ASCII}
}

// Validate checks the rules the schema cannot state and normalises cwd.
func (p *ShellParams) Validate() error {
	if p.action() == ActionExec {
		if len(p.Command) == 0 {
			return fmt.Errorf("command: is required when action is exec")
		}
		if strings.TrimSpace(p.Command[0]) == "" {
			return fmt.Errorf("command[0]: must name the executable (got an empty or blank string)")
		}
		total := 0
		for _, a := range p.Command {
			total += len(a)
		}
		if total > MaxCommandBytes {
			return fmt.Errorf("command: is %d bytes in all; the limit is %d (put long scripts in a file with write_file, or pass data on stdin)", total, MaxCommandBytes)
		}
	}
	if p.action() != ActionExec && (p.Background || p.GraceSeconds != nil) {
		return fmt.Errorf("background and grace_seconds: only for action exec")
	}
	if p.Background && p.CaptureOutput != nil && !*p.CaptureOutput {
		return fmt.Errorf("capture_output: a background job always keeps its output (drop capture_output, or run it in the foreground)")
	}
	cwd, err := wspath.Clean(p.Cwd)
	if err != nil {
		return fmt.Errorf("cwd: %w", err)
	}
	p.Cwd = cwd
	seen := make(map[string]string, len(p.Env))
	for k := range p.Env {
		upper := strings.ToUpper(k)
		if other, dup := seen[upper]; dup {
			return fmt.Errorf("env: the keys %q and %q are the same once uppercased", other, k)
		}
		seen[upper] = k
	}
	return nil
}

func (p *ShellParams) action() string {
	if p.Action == "" {
		return ActionExec
	}
	return p.Action
}

// ShellResult is podman_shell's result. For start and stop only action,
// container and cwd carry information.
type ShellResult struct {
	Action      string   `json:"action" jsonschema_description:"The action performed."`
	Container   string   `json:"container" jsonschema_description:"The session's container."`
	Command     []string `json:"command" jsonschema_description:"The command that ran (empty for start and stop)."`
	Cwd         string   `json:"cwd" jsonschema_description:"The absolute working directory inside the container."`
	ExitCode    int      `json:"exit_code" jsonschema_description:"The exit status; 128+N when killed by signal N; 124 on timeout."`
	Stdout      string   `json:"stdout" jsonschema_description:"Standard output, at most 32 KiB, ending with [truncated] when cut."`
	Stderr      string   `json:"stderr" jsonschema_description:"Standard error, at most 32 KiB, ending with [truncated] when cut."`
	StdoutBytes int64    `json:"stdout_bytes" jsonschema_description:"Bytes the command wrote to stdout in all."`
	StderrBytes int64    `json:"stderr_bytes" jsonschema_description:"Bytes the command wrote to stderr in all."`
	DurationMS  int64    `json:"duration_ms" jsonschema_description:"Run time in milliseconds."`
	TimedOut    bool     `json:"timed_out" jsonschema_description:"True when the timeout killed the command."`
	EndedBy     string   `json:"ended_by,omitempty" jsonschema_description:"The signal that ended a timed-out or cancelled command: SIGTERM when it exited within grace_seconds, else SIGKILL."`
	OutOfMemory string   `json:"out_of_memory,omitempty" jsonschema_description:"Set when the workspace's memory limit killed processes while the command ran: whether the command itself was killed (exit_code 137), how many, and the limit."`
	DiskFull    string   `json:"disk_full,omitempty" jsonschema_description:"Set when the command ended with the workspace's disk or /tmp full (no space, or no inode): what takes the space and which call frees it."`
	OutputJob   string   `json:"output_job,omitempty" jsonschema_description:"When stdout or stderr was truncated: the job id whose whole output the job tool pages (action output)."`
	Job         string   `json:"job,omitempty" jsonschema_description:"With background: the job's id."`
	JobState    string   `json:"job_state,omitempty" jsonschema_description:"With background: running, or exited when it ended within the first wait."`
	Attach      string   `json:"attach,omitempty" jsonschema_description:"For start: the command a person can paste in a terminal to open a shell in this container. Nothing is opened."`
}

// Text renders the result for text-only clients.
func (r ShellResult) Text() string {
	switch r.Action {
	case ActionStart:
		return fmt.Sprintf("container %s is running; %s is ready. A person can open a shell in it with:\n%s", r.Container, workspace.Root, r.Attach)
	case ActionStop:
		return fmt.Sprintf("container %s removed and %s emptied; the next call starts a fresh container", r.Container, workspace.Root)
	}
	var b strings.Builder
	switch {
	case r.Job != "" && r.JobState == "running":
		fmt.Fprintf(&b, "job %s started and is running (cwd %s); follow it with the job tool: action=status, action=output (stream, offset), action=signal, action=input\n", r.Job, r.Cwd)
	case r.Job != "":
		fmt.Fprintf(&b, "job %s already exited with %d in %d ms (cwd %s); the job tool pages its whole output\n", r.Job, r.ExitCode, r.DurationMS, r.Cwd)
		if r.OutOfMemory != "" {
			fmt.Fprintf(&b, "%s\n", r.OutOfMemory)
		}
	case r.TimedOut:
		fmt.Fprintf(&b, "timed out after %d ms: the command and every process it started were stopped by %s (exit 124)\n", r.DurationMS, r.EndedBy)
	case r.OutOfMemory != "":
		fmt.Fprintf(&b, "exit %d in %d ms (cwd %s): %s\n", r.ExitCode, r.DurationMS, r.Cwd, r.OutOfMemory)
	default:
		fmt.Fprintf(&b, "exit %d in %d ms (cwd %s)\n", r.ExitCode, r.DurationMS, r.Cwd)
	}
	if r.DiskFull != "" {
		fmt.Fprintf(&b, "disk full: %s\n", r.DiskFull)
	}
	if r.OutputJob != "" {
		fmt.Fprintf(&b, "output truncated: the whole of it is kept; page it with the job tool: action=output id=%s stream=stdout|stderr offset=<byte>\n", r.OutputJob)
	}
	for _, s := range []struct {
		name  string
		text  string
		bytes int64
	}{{"stdout", r.Stdout, r.StdoutBytes}, {"stderr", r.Stderr, r.StderrBytes}} {
		if s.bytes == 0 {
			continue
		}
		fmt.Fprintf(&b, "--- %s (%d bytes) ---\n%s", s.name, s.bytes, s.text)
		if !strings.HasSuffix(s.text, "\n") {
			b.WriteByte('\n')
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Commands is what podman_shell takes of a session's workspace to run a
// command in the foreground.
type Commands interface {
	// Exec runs a command in the session's container, creating the
	// container first if needed. A command that runs, whatever its exit
	// status, is a result; one that cannot start is an error.
	Exec(ctx context.Context, req workspace.ExecRequest) (workspace.ExecResult, error)
}

// JobStarter is what podman_shell takes of a session's workspace to run a
// command as a background job, which the job tool then follows
// (JobControl).
type JobStarter interface {
	// StartJob runs a command in the background and returns at once with
	// its ID and first output.
	StartJob(ctx context.Context, req workspace.JobRequest) (workspace.JobStart, error)
}

// Container is what podman_shell takes of a session's workspace to start,
// stop and describe its container.
type Container interface {
	// Info describes the session's container, whether or not it runs yet.
	Info() workspace.ContainerInfo
	// Start makes sure the container exists, runs and answers.
	Start(ctx context.Context) (workspace.ContainerInfo, error)
	// Reset removes the container and deletes the session's files; the
	// next call starts a fresh container on an empty workspace.
	Reset(ctx context.Context) (workspace.ContainerInfo, error)
}

// shellWorkspace is all podman_shell takes of a session's workspace: its
// container and the commands run in it in the foreground, which a
// workspace.Session serves itself, and the start of background jobs,
// which its jobs part serves beside the job tool's JobControl.
type shellWorkspace struct {
	Commands
	Container
	JobStarter
}

// takeShell takes podman_shell's interfaces from ws, or from its parts
// (PartOf), and names those none implements.
func takeShell(ws any) (shellWorkspace, []reflect.Type) {
	var missing []reflect.Type
	w := shellWorkspace{takePart[Commands](ws, &missing), takePart[Container](ws, &missing), takePart[JobStarter](ws, &missing)}
	return w, missing
}

// Shell returns the podman_shell tool; maxTimeout bounds timeout_seconds.
func Shell(workspaceFor WorkspaceFor, log *slog.Logger, maxTimeout time.Duration) (server.ServerTool, error) {
	maxSeconds := int(maxTimeout / time.Second)
	return build(workspaceFor, definition[shellWorkspace, ShellParams, ShellResult]{
		name:  "podman_shell",
		title: "Run a command in the workspace container",
		description: "Run a command in this session's isolated Linux container (Podman) and return its exit code and output. " +
			"The container is the same one the file tools work on: /workspace holds the session's files. It has no network " +
			"device (at most an HTTP proxy to the hosts the user allows; see the workspace prompt), no capabilities and runs " +
			"as an unprivileged user. `command` is an argv array, not a shell string: use " +
			"[\"sh\", \"-c\", \"...\"] for pipes, globs and redirection. Limits: command at most 4096 bytes; stdin at most " +
			fmt.Sprintf("48000 characters; env at most 64 entries; timeout_seconds 1-%d (default 30, or the profile's). On timeout the command and every ", maxSeconds) +
			"process it started get SIGTERM, then SIGKILL after grace_seconds (default 2); exit_code is 124, timed_out is true " +
			"and ended_by names the signal. Processes a command leaves running in the background are killed when it exits: " +
			"for servers, watchers and long work use background=true, which returns a job id at once (the job tool follows it). " +
			"stdout and stderr keep 32 KiB each and end with [truncated] when cut; stdout_bytes and stderr_bytes give the full " +
			"sizes and output_job names where the job tool pages the whole output. A non-zero exit is a normal result; a command " +
			"that cannot start (not found, not executable) is an error. action=start makes sure the container runs and gives " +
			"the command a person can paste to open a shell in it; action=stop removes it and empties /workspace, discarding " +
			"the changes to mounted host folders (their host copies never change).",
		annotations: annotate(false, true, false),
		adjust: func(s *jsonschema.Schema) {
			if t, ok := s.Properties.Get("timeout_seconds"); ok {
				t.Maximum = json.Number(strconv.Itoa(maxSeconds))
			}
		},
		tasks: true,
		take:  takeShell,
		handle: func(ctx context.Context, ws shellWorkspace, p ShellParams) (ShellResult, error) {
			return runShell(ctx, ws, p, log)
		},
	})
}

func runShell(ctx context.Context, ws shellWorkspace, p ShellParams, log *slog.Logger) (ShellResult, error) {
	res := ShellResult{Action: p.action(), Command: []string{}, Cwd: workspace.Root}
	switch p.action() {
	case ActionStart:
		info, err := ws.Start(ctx)
		res.Container, res.Attach = info.Name, info.Attach
		return res, err
	case ActionStop:
		info, err := ws.Reset(ctx)
		res.Container = info.Name
		return res, err
	}
	env := make(map[string]string, len(p.Env))
	for k, v := range p.Env {
		env[strings.ToUpper(k)] = v
	}
	grace := DefaultGraceSeconds
	if p.GraceSeconds != nil {
		grace = *p.GraceSeconds
	}
	if p.Background {
		return startJob(ctx, ws, p, env, time.Duration(grace)*time.Second, res)
	}
	capture := p.CaptureOutput == nil || *p.CaptureOutput
	timeout := time.Duration(p.TimeoutSeconds) * time.Second
	if timeout == 0 {
		// The profile's command_timeout, which the server checked against
		// --max-command-timeout; else the tool's default.
		if timeout = ws.Info().CommandTimeout; timeout == 0 {
			timeout = defaultTimeout * time.Second
		}
	}
	out, err := ws.Exec(ctx, workspace.ExecRequest{
		Argv:        p.Command,
		Dir:         p.Cwd,
		Env:         env,
		Stdin:       p.Stdin,
		Timeout:     timeout,
		Grace:       time.Duration(grace) * time.Second,
		Capture:     capture,
		OutputLimit: MaxOutputBytes,
		Progress:    progressFrom(ctx),
	})
	if err != nil {
		return res, err
	}
	res.Container = ws.Info().Name
	res.Command = p.Command
	res.Cwd = out.Dir
	res.ExitCode = out.ExitCode
	res.StdoutBytes, res.StderrBytes = out.StdoutBytes, out.StderrBytes
	res.DurationMS = out.DurationMillis
	res.TimedOut, res.EndedBy, res.OutputJob = out.TimedOut, out.EndedBy, out.OutputJob
	res.OutOfMemory = oomNote(out.OOM)
	res.DiskFull = workspace.DiskFullNote(out.DiskFull, "the command")
	res.Stdout = stream(out.Stdout, out.StdoutTruncated, capture)
	res.Stderr = stream(out.Stderr, out.StderrTruncated, capture)
	log.Info("podman_shell finished", "container", res.Container, "argv0", p.Command[0], "args", len(p.Command)-1,
		"exit_code", res.ExitCode, "timed_out", res.TimedOut, "out_of_memory", res.OutOfMemory != "", "disk_full", res.DiskFull != "", "duration_ms", res.DurationMS,
		"stdout_bytes", res.StdoutBytes, "stderr_bytes", res.StderrBytes,
		"stdout_preview", preview(out.Stdout), "stderr_preview", preview(out.Stderr))
	return res, nil
}

// startJob runs p's command as a background job.
func startJob(ctx context.Context, ws shellWorkspace, p ShellParams, env map[string]string, grace time.Duration, res ShellResult) (ShellResult, error) {
	started, err := ws.StartJob(ctx, workspace.JobRequest{
		Argv: p.Command, Dir: p.Cwd, Env: env, Stdin: p.Stdin,
		Timeout: time.Duration(p.TimeoutSeconds) * time.Second, Grace: grace, Wait: jobFirstOutputWait,
	})
	if err != nil {
		return res, err
	}
	j := started.Job
	res.Container, res.Command, res.Cwd = ws.Info().Name, p.Command, j.Dir
	res.Job, res.JobState = j.ID, j.State
	res.StdoutBytes, res.StderrBytes, res.DurationMS = j.StdoutBytes, j.StderrBytes, j.DurationMillis
	if j.ExitCode != nil {
		res.ExitCode = *j.ExitCode
	}
	res.OutOfMemory = oomNote(j.OOM)
	res.DiskFull = workspace.DiskFullNote(j.DiskFull, "the job")
	res.Stdout = stream(started.Stdout.Data, started.Stdout.Next < j.StdoutBytes, true)
	res.Stderr = stream(started.Stderr.Data, started.Stderr.Next < j.StderrBytes, true)
	return res, nil
}

// stream is one output stream as the result shows it.
func stream(text string, truncated, captured bool) string {
	switch {
	case !captured:
		return NotCapturedNote
	case !truncated:
		return text
	case strings.HasSuffix(text, "\n"):
		return text + TruncatedMarker
	}
	return text + "\n" + TruncatedMarker
}

func preview(s string) string {
	r := []rune(s)
	if len(r) > logPreviewChars {
		return string(r[:logPreviewChars]) + "…"
	}
	return s
}

func uintPtr(v uint64) *uint64 { return &v }
