package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wink-mcp/wink-mcp/agent/wire"
)

// statusFD is the descriptor on which a supervisor reports a failed start to
// the agent; it is closed, empty, once the command runs.
const statusFD = 3

// passFD is handed to the command as its descriptor 3 when the agent asks
// (evaluate_python's runner writes its result there).
const passFD = 4

// cleanupTimeout bounds the killing of what a command left behind.
const cleanupTimeout = 2 * time.Second

// Supervise runs argv as its child, with the supervisor's standard streams,
// directory and environment, and returns the exit status to exit with: the
// child's, or 128 plus the signal that killed it. The supervisor is the
// subreaper of everything the child starts, so processes that double-fork or
// call setsid stay below it; when the child exits, Supervise kills them all.
// A child that cannot start is reported as a JSON wire.Error on descriptor 3,
// with status 127 (not found) or 126 (not executable). With passResult,
// descriptor 4 becomes the child's descriptor 3.
func Supervise(argv []string, passResult bool) int {
	// The status descriptor was inherited without close-on-exec; set it so the
	// command never holds the pipe (the agent reads it to end of file).
	unix.CloseOnExec(statusFD)
	status := os.NewFile(statusFD, "status")
	// Only the agent may end a supervisor: the command's own signals to its
	// process group or parent must not orphan the processes it started.
	shieldFromSignals(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return reportStart(status, wire.Errorf(wire.CodeInternal, "becoming a subreaper: %v", err), 126)
	}
	if len(argv) == 0 {
		return reportStart(status, wire.Errorf(wire.CodeBadRequest, "no command given"), 127)
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return reportStart(status, lookupError(argv[0], err), 127)
	}
	files := []*os.File{os.Stdin, os.Stdout, os.Stderr}
	if passResult {
		unix.CloseOnExec(passFD)
		files = append(files, os.NewFile(passFD, "pass"))
	}
	child, err := os.StartProcess(path, argv, &os.ProcAttr{
		Files: files,
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		return reportStart(status, startError(argv[0], err), 126)
	}
	if status != nil {
		_ = status.Close()
	}
	code := waitFor(child.Pid)
	killDescendants(os.Getpid(), cleanupTimeout, func() { reapChildren() })
	for reapChildren() {
		time.Sleep(time.Millisecond)
	}
	return code
}

// SuperviseMain runs the supervisor from its command line,
// "[--pass-fd] -- COMMAND [ARG...]", and returns the exit status.
func SuperviseMain(args []string) int {
	pass := len(args) > 0 && args[0] == "--pass-fd"
	if pass {
		args = args[1:]
	}
	if len(args) == 0 || args[0] != "--" {
		fmt.Fprintln(os.Stderr, "usage: wink-mcp supervise [--pass-fd] -- COMMAND [ARG...]")
		return 2
	}
	return Supervise(args[1:], pass)
}

// waitFor reaps children until pid exits, collecting any orphan that exits
// first, and returns pid's exit status in shell convention.
func waitFor(pid int) int {
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 126
		}
		if got != pid {
			continue
		}
		if ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	}
}

func reportStart(status *os.File, e *wire.Error, code int) int {
	if status != nil {
		_ = json.NewEncoder(status).Encode(e)
		_ = status.Close()
	}
	fmt.Fprintln(os.Stderr, e.Message)
	return code
}

func lookupError(name string, err error) *wire.Error {
	if errors.Is(err, exec.ErrNotFound) {
		if strings.Contains(name, "/") {
			return wire.Errorf(wire.CodeNotFound, "cannot run %q: no such file", name)
		}
		return wire.Errorf(wire.CodeNotFound, "cannot run %q: command not found in PATH (%s)", name, os.Getenv("PATH"))
	}
	return startError(name, err)
}

func startError(name string, err error) *wire.Error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return wire.Errorf(wire.CodeNotFound, "cannot run %q: no such file", name)
	case errors.Is(err, fs.ErrPermission):
		return wire.Errorf(wire.CodeStartFailed, "cannot run %q: permission denied (is it executable?)", name)
	case errors.Is(err, unix.ENOEXEC):
		return wire.Errorf(wire.CodeStartFailed, "cannot run %q: not an executable format (for a script, add a #! line or run it with its interpreter, e.g. [\"sh\", %q])", name, name)
	case errors.Is(err, unix.EISDIR):
		return wire.Errorf(wire.CodeStartFailed, "cannot run %q: it is a directory", name)
	}
	return wire.Errorf(wire.CodeStartFailed, "cannot run %q: %v", name, err)
}
