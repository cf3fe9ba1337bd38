package agent

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/wink-mcp/wink-mcp/agent/wire"
)

// waitDelay bounds how long a run waits for a command's output pipes to
// close after its supervisor has exited (a stray that escaped it may hold them).
const waitDelay = time.Second

// runSpec is a process to run under a supervisor.
type runSpec struct {
	argv    []string
	dir     string // absolute
	env     []string
	stdin   string
	timeout time.Duration
	capture bool
	limit   int // bytes kept of each stream
	// result, when set, receives what the command writes to its descriptor 3.
	result io.Writer
}

// runOutcome is what a run did.
type runOutcome struct {
	exitCode       int
	stdout, stderr *capture
	timedOut       bool
	duration       time.Duration
}

// run starts spec's command under a supervisor and waits for it. A timeout
// kills the whole tree and is reported in the outcome; a cancelled ctx kills
// it too and is reported as an error, as is a command that cannot start.
func (a *Agent) run(ctx context.Context, spec runSpec) (*runOutcome, *wire.Error) {
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "creating status pipe: %v", err)
	}
	defer statusR.Close()
	extra := []*os.File{statusW}
	var resultR *os.File
	if spec.result != nil {
		var resultW *os.File
		if resultR, resultW, err = os.Pipe(); err != nil {
			statusW.Close()
			return nil, wire.Errorf(wire.CodeInternal, "creating result pipe: %v", err)
		}
		defer resultR.Close()
		extra = append(extra, resultW)
	}

	out := &runOutcome{stdout: newCapture(spec.limit, spec.capture), stderr: newCapture(spec.limit, spec.capture)}
	supervise := []string{"supervise", "--"}
	if spec.result != nil {
		supervise = []string{"supervise", "--pass-fd", "--"}
	}
	cmd := exec.Command(a.self, append(supervise, spec.argv...)...)
	cmd.Dir = spec.dir
	cmd.Env = spec.env
	cmd.Stdout = out.stdout
	cmd.Stderr = out.stderr
	if spec.stdin != "" {
		cmd.Stdin = strings.NewReader(spec.stdin)
	}
	cmd.ExtraFiles = extra
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = waitDelay

	start := time.Now()
	err = a.startChild(cmd)
	for _, f := range extra {
		f.Close()
	}
	if err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "starting supervisor: %v", err)
	}
	pid := cmd.Process.Pid
	startErr := make(chan *wire.Error, 1)
	go func() { startErr <- readStartError(statusR) }()
	resultDone := make(chan struct{})
	go func() {
		defer close(resultDone)
		if resultR != nil {
			_, _ = io.Copy(spec.result, io.LimitReader(resultR, wire.MaxFrameBytes))
		}
	}()
	waited := make(chan error, 1)
	go func() {
		waited <- cmd.Wait()
		a.forgetChild(pid)
	}()

	timer := time.NewTimer(spec.timeout)
	defer timer.Stop()
	var cancelled bool
	select {
	case err = <-waited:
	case <-timer.C:
		out.timedOut = true
		killTree(pid, cleanupTimeout)
		err = <-waited
	case <-ctx.Done():
		cancelled = true
		killTree(pid, cleanupTimeout)
		err = <-waited
	}
	out.duration = time.Since(start)
	<-resultDone
	if e := <-startErr; e != nil {
		return nil, e
	}
	if cancelled {
		return nil, wire.Errorf(wire.CodeCancelled, "command cancelled")
	}
	if err != nil && cmd.ProcessState == nil {
		return nil, wire.Errorf(wire.CodeInternal, "waiting for command: %v", err)
	}
	out.exitCode = exitCode(cmd.ProcessState)
	if out.timedOut {
		out.exitCode = 124
	}
	return out, nil
}

// exec answers OpExec.
func (a *Agent) exec(ctx context.Context, args wire.ExecArgs) (*wire.ExecResult, *wire.Error) {
	if len(args.Argv) == 0 || args.Argv[0] == "" {
		return nil, wire.Errorf(wire.CodeBadRequest, "command is empty")
	}
	if args.TimeoutMillis <= 0 || args.OutputLimit <= 0 {
		return nil, wire.Errorf(wire.CodeBadRequest, "timeout and output limit must be positive")
	}
	dir, werr := a.resolveDir(args.Dir)
	if werr != nil {
		return nil, werr
	}
	out, werr := a.run(ctx, runSpec{
		argv: args.Argv, dir: dir, env: mergeEnv(os.Environ(), args.Env), stdin: args.Stdin,
		timeout: time.Duration(args.TimeoutMillis) * time.Millisecond, capture: args.Capture, limit: args.OutputLimit,
	})
	if werr != nil {
		return nil, werr
	}
	res := &wire.ExecResult{
		Dir:            dir,
		ExitCode:       out.exitCode,
		StdoutBytes:    out.stdout.total,
		StderrBytes:    out.stderr.total,
		TimedOut:       out.timedOut,
		DurationMillis: out.duration.Milliseconds(),
	}
	res.Stdout, res.StdoutTruncated = out.stdout.text()
	res.Stderr, res.StderrTruncated = out.stderr.text()
	return res, nil
}

// resolveDir checks that dir (relative, normalised) is a directory inside the
// workspace, without following a symlink out of it, and returns its absolute path.
func (a *Agent) resolveDir(dir string) (string, *wire.Error) {
	if dir == "" || dir == "." {
		return a.workspace, nil
	}
	fi, err := a.root.Stat(dir)
	switch {
	case err == nil && !fi.IsDir():
		return "", wire.Errorf(wire.CodeInvalid, "cwd %q is not a directory", dir)
	case err == nil:
		return filepath.Join(a.workspace, dir), nil
	case errors.Is(err, os.ErrNotExist):
		return "", wire.Errorf(wire.CodeNotFound, "cwd %q does not exist in the workspace", dir)
	case isEscape(err):
		return "", wire.Errorf(wire.CodeInvalid, "cwd %q leads outside the workspace through a symlink", dir)
	}
	return "", wire.Errorf(wire.CodeInvalid, "cwd %q: %v", dir, unwrapPath(err))
}

// readStartError reads the supervisor's start report: nothing when the
// command started, a JSON wire.Error when it did not.
func readStartError(r io.Reader) *wire.Error {
	b, err := io.ReadAll(io.LimitReader(r, 64<<10))
	if err != nil || len(b) == 0 {
		return nil
	}
	var e wire.Error
	if json.Unmarshal(b, &e) != nil || e.Message == "" {
		return wire.Errorf(wire.CodeStartFailed, "command did not start: %s", strings.TrimSpace(string(b)))
	}
	return &e
}

func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// mergeEnv returns base with the variables in over set, replacing any earlier value.
func mergeEnv(base []string, over map[string]string) []string {
	if len(over) == 0 {
		return base
	}
	out := make([]string, 0, len(base)+len(over))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if _, replaced := over[name]; !replaced {
			out = append(out, kv)
		}
	}
	for k, v := range over {
		out = append(out, k+"="+v)
	}
	return out
}
