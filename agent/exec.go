//go:build linux

package agent

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wink-mcp/wink-mcp/wire"
)

// waitDelay bounds how long a run waits for a command's output pipes to
// close after the command has exited (a stray that escaped its supervisor
// may hold them).
const waitDelay = time.Second

// runSpec is a process to run under a supervisor.
type runSpec struct {
	argv    []string
	dir     string // absolute
	env     []string
	stdin   string
	timeout time.Duration
	// grace is how long the tree has between SIGTERM and SIGKILL when the
	// timeout passes or the run is cancelled; zero kills at once.
	grace   time.Duration
	capture bool
	limit   int // bytes kept of each stream
	// keepWhole spills an output that outgrows limit to a file, so that
	// the whole of it can be paged (see keepOutput).
	keepWhole bool
	// result, when set, receives what the command writes to its descriptor 3.
	result io.Writer
	// progress, when set, is called every progressInterval while the command runs.
	progress func(wire.Progress)
}

// progressInterval is how often a running command reports progress, well
// within the 5 s an MCP client may wait between notifications.
const progressInterval = 2 * time.Second

// runOutcome is what a run did.
type runOutcome struct {
	exitCode       int
	stdout, stderr *capture
	timedOut       bool
	// endedBy names the signal that ended a timed-out or cancelled run:
	// SIGTERM when the tree exited within the grace, else SIGKILL.
	endedBy  string
	duration time.Duration
	// oom says what the memory limit killed while it ran, nil for nothing.
	oom *wire.OOM
	// full says which filesystems it left full.
	full fullDisks
	// notes are what the agent told the command (see tellCommand).
	notes []string
}

// replyOrError is a supervisor's answer, or why none came.
type replyOrError struct {
	reply commandReply
	err   error
}

// run hands spec's command to a supervisor and waits for it. A timeout
// kills the command's whole tree and is reported in the outcome; a
// cancelled ctx kills it too and is reported as an error, as is a command
// that cannot start.
func (a *Agent) run(ctx context.Context, spec runSpec) (*runOutcome, *wire.Error) {
	sup, err := a.supervisors.take()
	if err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "%v", err)
	}
	st, err := openStreams(spec.stdin != "", spec.result != nil)
	if err != nil {
		a.supervisors.release(sup)
		return nil, wire.Errorf(wire.CodeInternal, "creating the command's pipes: %v", err)
	}
	out := &runOutcome{stdout: newCapture(spec.limit, spec.capture), stderr: newCapture(spec.limit, spec.capture)}
	if spec.keepWhole {
		out.stdout.spillDir, out.stderr.spillDir = a.workspace, a.workspace
	}
	start, oomBefore := time.Now(), oomKills()
	a.guard.expectNotes(sup.pid)
	defer a.guard.takeNotes(sup.pid)
	err = send(sup.ctl, commandSpec{Argv: spec.argv, Dir: spec.dir, Env: spec.env, PassResult: spec.result != nil}, st.commandEnds())
	st.closeCommandEnds()
	if err != nil {
		st.closeAll()
		killTree(sup.pid, cleanupTimeout)
		return nil, wire.Errorf(wire.CodeInternal, "handing the command to its supervisor: %v", err)
	}
	copied := st.copy(spec.stdin, out.stdout, out.stderr, spec.result)
	replies := make(chan replyOrError, 1)
	go func() {
		var r commandReply
		fds, err := receive(sup.ctl, &r)
		for _, fd := range fds {
			unix.Close(fd) // a reply carries none
		}
		replies <- replyOrError{r, err}
	}()

	if spec.progress != nil {
		stopReports := reportProgress(start, out, spec.progress)
		defer stopReports()
	}
	timer := time.NewTimer(spec.timeout)
	defer timer.Stop()
	var got replyOrError
	var cancelled bool
	select {
	case got = <-replies:
	case <-timer.C:
		out.timedOut = true
		got, out.endedBy = sup.stopCommand(replies, spec.grace)
	case <-ctx.Done():
		cancelled = true
		got, out.endedBy = sup.stopCommand(replies, spec.grace)
	}
	out.duration = time.Since(start)
	st.wait(copied, waitDelay)
	out.notes = a.guard.takeNotes(sup.pid)
	if got.err != nil {
		// The supervisor died mid-command (the command may have killed it);
		// what it supervised is now init's and dies as strays.
		killTree(sup.pid, cleanupTimeout)
		if !out.timedOut && !cancelled {
			return nil, wire.Errorf(wire.CodeInternal, "the command's supervisor stopped before the command ended (did the command kill it?)")
		}
	} else {
		a.supervisors.release(sup)
	}
	switch {
	case got.err == nil && got.reply.Error != nil:
		return nil, got.reply.Error
	case cancelled:
		return nil, wire.Errorf(wire.CodeCancelled, "command cancelled")
	case out.timedOut:
		out.exitCode = 124
	default:
		out.exitCode = got.reply.ExitCode
	}
	out.oom = oomReport(oomBefore, out.exitCode, out.timedOut)
	out.full = a.disks.fullNow()
	return out, nil
}

// reportProgress calls report every progressInterval with the latest line
// of output, until the returned function is called.
func reportProgress(start time.Time, out *runOutcome, report func(wire.Progress)) func() {
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(progressInterval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			line, when := out.stdout.latestLine()
			if errLine, errWhen := out.stderr.latestLine(); errWhen.After(when) {
				line = errLine
			}
			report(wire.Progress{ElapsedMillis: time.Since(start).Milliseconds(), Line: line})
		}
	}()
	return func() { close(done) }
}

// exec answers OpExec; report sends its progress frames.
func (a *Agent) exec(ctx context.Context, args wire.ExecArgs, report func(wire.Progress)) (*wire.ExecResult, *wire.Error) {
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
		timeout: time.Duration(args.TimeoutMillis) * time.Millisecond, grace: time.Duration(args.GraceMillis) * time.Millisecond,
		capture: args.Capture, limit: args.OutputLimit, keepWhole: args.Capture,
		progress: progressIf(args.Progress, report),
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
		EndedBy:        out.endedBy,
		DurationMillis: out.duration.Milliseconds(),
		OOM:            out.oom,
		DiskFull:       a.disks.report(out.full),
	}
	res.Stdout, res.StdoutTruncated = out.stdout.text()
	res.Stderr, res.StderrTruncated = out.stderr.text()
	res.Stderr = withNotes(res.Stderr, out.notes)
	res.OutputJob = a.jobs.keepOutput(args.Argv, dir, time.Now().Add(-out.duration), out)
	return res, nil
}

// progressIf returns report when progress was asked for.
func progressIf(asked bool, report func(wire.Progress)) func(wire.Progress) {
	if asked {
		return report
	}
	return nil
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
