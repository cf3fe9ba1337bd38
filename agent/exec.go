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

// waitDelay bounds how long exec waits for a command's output pipes to close
// after its supervisor has exited (a stray that escaped it may hold them).
const waitDelay = time.Second

// exec runs args.Argv under a supervisor and returns its result. A timeout
// kills the whole tree and is reported in the result; a cancelled ctx kills it
// too and is reported as an error.
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
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "creating status pipe: %v", err)
	}
	defer statusR.Close()

	stdout := newCapture(args.OutputLimit, args.Capture)
	stderr := newCapture(args.OutputLimit, args.Capture)
	cmd := exec.Command(a.self, append([]string{"supervise", "--"}, args.Argv...)...)
	cmd.Dir = dir
	cmd.Env = mergeEnv(os.Environ(), args.Env)
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	if args.Stdin != "" {
		cmd.Stdin = strings.NewReader(args.Stdin)
	}
	cmd.ExtraFiles = []*os.File{statusW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = waitDelay

	start := time.Now()
	err = a.startChild(cmd)
	statusW.Close()
	if err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "starting supervisor: %v", err)
	}
	pid := cmd.Process.Pid
	startErr := make(chan *wire.Error, 1)
	go func() { startErr <- readStartError(statusR) }()
	waited := make(chan error, 1)
	go func() {
		waited <- cmd.Wait()
		a.forgetChild(pid)
	}()

	timer := time.NewTimer(time.Duration(args.TimeoutMillis) * time.Millisecond)
	defer timer.Stop()
	var timedOut, cancelled bool
	select {
	case err = <-waited:
	case <-timer.C:
		timedOut = true
		killTree(pid, cleanupTimeout)
		err = <-waited
	case <-ctx.Done():
		cancelled = true
		killTree(pid, cleanupTimeout)
		err = <-waited
	}
	if e := <-startErr; e != nil {
		return nil, e
	}
	if cancelled {
		return nil, wire.Errorf(wire.CodeCancelled, "command cancelled")
	}
	if err != nil && cmd.ProcessState == nil {
		return nil, wire.Errorf(wire.CodeInternal, "waiting for command: %v", err)
	}
	res := &wire.ExecResult{
		Dir:            dir,
		ExitCode:       exitCode(cmd.ProcessState),
		StdoutBytes:    stdout.total,
		StderrBytes:    stderr.total,
		TimedOut:       timedOut,
		DurationMillis: time.Since(start).Milliseconds(),
	}
	if timedOut {
		res.ExitCode = 124
	}
	res.Stdout, res.StdoutTruncated = stdout.text()
	res.Stderr, res.StderrTruncated = stderr.text()
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
