// Package wire defines the messages, and their framing, that the wink-mcp
// server and the agent inside a workspace container exchange over one
// long-lived channel.
//
// A frame is one JSON object on one line, followed by a tab and the
// object's CRC-32C in hex, so a frame damaged on its way is detected rather
// than misread. JSON escapes every control byte inside strings, so a frame
// never contains a raw newline, NUL or Podman's detach keys (0x10, 0x11),
// whatever bytes a command prints or a file holds: the only control bytes
// on the wire are the tab before each check and the newline ending each frame.
package wire

import (
	"encoding/json"
	"fmt"
)

// Operation names carried in Request.Op.
const (
	// OpPing answers at once with a PingResult; it proves the channel works.
	OpPing = "ping"
	// OpExec runs a process under the workspace and answers with an ExecResult.
	OpExec = "exec"
	// OpCancel stops the request named by CancelArgs.Target; it has no answer.
	OpCancel = "cancel"
)

// Error codes carried in Error.Code.
const (
	// CodeBadRequest means the request itself was malformed.
	CodeBadRequest = "bad_request"
	// CodeNotFound means a path or an executable does not exist.
	CodeNotFound = "not_found"
	// CodeInvalid means the request was well formed but cannot be honoured
	// (a path outside the workspace, a file where a directory was expected).
	CodeInvalid = "invalid"
	// CodeStartFailed means a process could not be started.
	CodeStartFailed = "start_failed"
	// CodeUnavailable means the image lacks something the request needs (python3).
	CodeUnavailable = "unavailable"
	// CodeCancelled means the request was cancelled before it finished.
	CodeCancelled = "cancelled"
	// CodeInternal means the agent failed in a way the caller cannot fix.
	CodeInternal = "internal"
	// CodeConflict means a file changed (by a command) between being read
	// and being replaced, so the change was not made.
	CodeConflict = "conflict"
)

// Request is one call from the server to the agent. IDs are chosen by the
// server and must be unique among the requests in flight on a channel.
type Request struct {
	ID   uint64          `json:"id"`
	Op   string          `json:"op"`
	Args json.RawMessage `json:"args,omitempty"`
}

// Response answers the Request with the same ID: exactly one of Result (an
// operation's result value) and Error is set. ID is encoded first, so a
// Client can route a frame before decoding it.
type Response struct {
	ID     uint64 `json:"id"`
	Result any    `json:"result,omitempty"`
	Error  *Error `json:"error,omitempty"`
	// Progress, in a frame with neither Result nor Error, reports on a
	// request still running; the request's answer comes later.
	Progress *Progress `json:"progress,omitempty"`
	// Ack, alone in a frame, says the agent has taken the request: from
	// then on it runs, so it is never sent again on another channel.
	Ack bool `json:"ack,omitempty"`
}

// Progress reports on a running command.
type Progress struct {
	ElapsedMillis int64 `json:"elapsed_ms"`
	// Line is the latest line the command wrote, to stdout or stderr.
	Line string `json:"line"`
}

// Error is a failure reported by the agent. It implements error.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Errorf builds an Error with a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// PingResult answers OpPing.
type PingResult struct {
	// PID is the agent's process ID inside the container (1 when it runs as init).
	PID int `json:"pid"`
}

// CancelArgs are the arguments of OpCancel.
type CancelArgs struct {
	Target uint64 `json:"target"`
}

// ExecArgs are the arguments of OpExec. The server validates them; the agent
// checks again what only it can check (that Dir exists inside the workspace).
type ExecArgs struct {
	// Argv is the command; Argv[0] is looked up in the PATH of the merged environment.
	Argv []string `json:"argv"`
	// Dir is the working directory, a normalised path relative to the workspace ("" for its root).
	Dir string `json:"dir"`
	// Env is merged over the agent's own environment.
	Env map[string]string `json:"env,omitempty"`
	// Stdin is written to the process's standard input, which is then closed.
	Stdin string `json:"stdin,omitempty"`
	// TimeoutMillis bounds the run; the whole process tree is killed when it passes.
	TimeoutMillis int64 `json:"timeout_ms"`
	// GraceMillis is how long the tree has between SIGTERM and SIGKILL when
	// the timeout passes or the request is cancelled; zero kills at once.
	GraceMillis int64 `json:"grace_ms,omitempty"`
	// Capture keeps the output; when false it is counted and discarded.
	Capture bool `json:"capture"`
	// OutputLimit is the number of bytes kept of each stream.
	OutputLimit int `json:"output_limit"`
	// Progress asks for Progress frames while the command runs.
	Progress bool `json:"progress,omitempty"`
}

// ExecResult answers OpExec.
type ExecResult struct {
	// Dir is the absolute working directory the process ran in.
	Dir      string `json:"dir"`
	ExitCode int    `json:"exit_code"`
	// Stdout and Stderr hold at most OutputLimit bytes each, cut at a UTF-8
	// boundary, with invalid UTF-8 replaced by U+FFFD.
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
	// StdoutBytes and StderrBytes count everything the process wrote.
	StdoutBytes     int64 `json:"stdout_bytes"`
	StderrBytes     int64 `json:"stderr_bytes"`
	StdoutTruncated bool  `json:"stdout_truncated"`
	StderrTruncated bool  `json:"stderr_truncated"`
	TimedOut        bool  `json:"timed_out"`
	// EndedBy names the signal that ended a timed-out or cancelled command
	// ("SIGTERM" or "SIGKILL"); empty when it exited by itself.
	EndedBy        string `json:"ended_by,omitempty"`
	DurationMillis int64  `json:"duration_ms"`
	// OutputJob, when an output was truncated, is the job record that keeps
	// the command's whole output, to be paged with OpJobOutput.
	OutputJob string `json:"output_job,omitempty"`
	// Changes are the workspace changes seen when the command ended (see
	// OpChanges): the command's own, and any other process's.
	Changes []Change `json:"changes,omitempty"`
	// OOM, when set, says the container's memory limit killed processes
	// while the command ran.
	OOM *OOM `json:"oom,omitempty"`
	// DiskFull, when set, says the command left a filesystem it writes to
	// full, and what takes the space.
	DiskFull *DiskFull `json:"disk_full,omitempty"`
}

// OOM is what the container's memory limit did while a command ran, as
// its memory cgroup counts it.
type OOM struct {
	// Kills counts the processes the kernel's OOM killer ended in the
	// container while the command ran (any command's).
	Kills int64 `json:"kills"`
	// Killed says the command itself was ended so: it died of a SIGKILL
	// that the agent did not send while the count rose.
	Killed bool `json:"killed,omitempty"`
	// LimitBytes is the container's memory limit, 0 when unknown.
	LimitBytes int64 `json:"limit_bytes,omitempty"`
}
