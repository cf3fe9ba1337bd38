//go:build linux

package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wink-mcp/wink-mcp/wire"
)

// controlFD is the supervisor's end of its control socket with the agent.
const controlFD = 3

// cleanupTimeout bounds the killing of what a command left behind.
const cleanupTimeout = 2 * time.Second

// maxControlMessage bounds one message on a control socket.
const maxControlMessage = 1 << 20

// commandSpec is what the agent sends a supervisor, with the command's
// standard streams (and, with PassResult, a fourth descriptor the command
// gets as its descriptor 3) attached as SCM_RIGHTS.
type commandSpec struct {
	Argv       []string `json:"argv"`
	Dir        string   `json:"dir"`
	Env        []string `json:"env"`
	PassResult bool     `json:"pass_result"`
}

// commandReply is the supervisor's answer: the exit status in shell
// convention, or why the command did not start.
type commandReply struct {
	ExitCode int         `json:"exit_code"`
	Error    *wire.Error `json:"error,omitempty"`
}

// SuperviseMain runs a supervisor on the control socket at descriptor 3 and
// returns its exit status. A supervisor serves commands one at a time until
// the agent closes the socket. It is the subreaper of everything a command
// starts, so processes that double-fork or call setsid stay below it; when a
// command's main process exits, it kills everything that command left.
func SuperviseMain([]string) int {
	f := os.NewFile(controlFD, "control")
	conn, err := net.FileConn(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(os.Stderr, "wink-mcp supervise: the control socket is not descriptor 3: %v\n", err)
		return 2
	}
	ctl, ok := conn.(*net.UnixConn)
	if !ok {
		fmt.Fprintln(os.Stderr, "wink-mcp supervise: descriptor 3 is not a unix socket")
		return 2
	}
	// Only the agent may end a supervisor: a command's signals to its parent
	// must not orphan the processes it started.
	shieldFromSignals(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	// Commands inherit the highest OOM score, so the kernel kills them, not
	// the agent, when the container runs out of memory. Raising it needs no
	// privilege; it must come before the process stops being dumpable,
	// which makes its /proc files root's.
	if err := os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0); err != nil {
		fmt.Fprintf(os.Stderr, "wink-mcp supervise: raising the OOM score of commands: %v\n", err)
	}
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "wink-mcp supervise: becoming a subreaper: %v\n", err)
		return 2
	}
	for {
		var spec commandSpec
		fds, err := receive(ctl, &spec)
		if err != nil {
			return 0 // the agent closed the socket, or is gone
		}
		files := make([]*os.File, len(fds))
		for i, fd := range fds {
			files[i] = os.NewFile(uintptr(fd), "stream") // blocking, as the command expects
		}
		reply := runCommand(spec, files)
		if err := send(ctl, reply, nil); err != nil {
			return 0
		}
	}
}

// runCommand starts one command, waits for it and kills its leftovers. It
// closes files once the command has them.
func runCommand(spec commandSpec, files []*os.File) commandReply {
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	if len(spec.Argv) == 0 || len(files) < 3 || (spec.PassResult && len(files) < 4) {
		return commandReply{Error: wire.Errorf(wire.CodeBadRequest, "malformed command for the supervisor")}
	}
	path, err := lookPath(spec.Argv[0], spec.Dir, envValue(spec.Env, "PATH"))
	if err != nil {
		return commandReply{Error: lookupError(spec.Argv[0], envValue(spec.Env, "PATH"), err)}
	}
	child, err := os.StartProcess(path, spec.Argv, &os.ProcAttr{
		Dir:   spec.Dir,
		Env:   spec.Env,
		Files: files,
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		return commandReply{Error: startError(spec.Argv[0], err)}
	}
	for _, f := range files {
		f.Close() // only the command holds its streams now, so they end with it
	}
	files = nil
	code := waitFor(child.Pid)
	killDescendants(os.Getpid(), cleanupTimeout, func() { reapChildren() })
	for deadline := time.Now().Add(cleanupTimeout); reapChildren() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	return commandReply{ExitCode: code}
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

// lookPath finds the executable for name as a shell would with this PATH;
// a name with a slash is taken relative to dir. Relative PATH entries are
// ignored, as os/exec does.
func lookPath(name, dir, pathEnv string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return p, executable(p)
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if filepath.IsAbs(d) {
			if p := filepath.Join(d, name); executable(p) == nil {
				return p, nil
			}
		}
	}
	return "", exec.ErrNotFound
}

func executable(p string) error {
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return err
	case fi.IsDir():
		return unix.EISDIR
	case fi.Mode()&0o111 == 0:
		return fs.ErrPermission
	}
	return nil
}

func envValue(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}

func lookupError(name, pathEnv string, err error) *wire.Error {
	if errors.Is(err, exec.ErrNotFound) {
		return wire.Errorf(wire.CodeNotFound, "cannot run %q: command not found in PATH (%s)", name, pathEnv)
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

// send writes one JSON message with descriptors attached.
func send(c *net.UnixConn, v any, files []*os.File) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var oob []byte
	if len(files) > 0 {
		fds := make([]int, len(files))
		for i, f := range files {
			fds[i] = int(f.Fd())
		}
		oob = unix.UnixRights(fds...)
	}
	_, _, err = c.WriteMsgUnix(b, oob, nil)
	return err
}

// receive reads one JSON message and the descriptors attached to it, which
// are close-on-exec and in the mode (blocking or not) the sender left them.
func receive(c *net.UnixConn, v any) ([]int, error) {
	buf := make([]byte, maxControlMessage)
	oob := make([]byte, unix.CmsgSpace(8*4))
	n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, errors.New("control socket closed")
	}
	var fds []int
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		if rights, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, rights...)
		}
	}
	for _, fd := range fds {
		unix.CloseOnExec(fd)
	}
	if err := json.Unmarshal(buf[:n], v); err != nil {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, err
	}
	return fds, nil
}
