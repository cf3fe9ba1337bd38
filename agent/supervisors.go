//go:build linux

package agent

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// maxIdleSupervisors is how many supervisors wait for work between commands.
// Starting one costs the binary's start-up (about 10 ms of package
// initialisation); a waiting one costs its memory.
const maxIdleSupervisors = 2

// supervisor is a running `wink-mcp supervise` and the agent's end of its
// control socket.
type supervisor struct {
	pid    int
	ctl    *net.UnixConn
	exited chan struct{}
}

// alive reports whether the supervisor process still runs.
func (s *supervisor) alive() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// stopCommand stops the command s runs (not s itself):
// SIGTERM to its whole tree, then, when the command has not ended within
// grace, SIGKILL. It waits for the supervisor's report, killing a
// supervisor that does not report in time, and names the signal that
// ended the command.
func (s *supervisor) stopCommand(replies <-chan replyOrError, grace time.Duration) (replyOrError, string) {
	if grace > 0 {
		signalDescendants(s.pid, unix.SIGTERM)
		select {
		case r := <-replies:
			return r, "SIGTERM"
		case <-time.After(grace):
		}
	}
	killDescendants(s.pid, cleanupTimeout, nil)
	select {
	case r := <-replies:
		return r, "SIGKILL"
	case <-time.After(2 * cleanupTimeout):
		killTree(s.pid, cleanupTimeout)
		return <-replies, "SIGKILL"
	}
}

// supervisors starts the supervisors that run commands, keeps a few waiting
// for work between commands, and records every one it started until it is
// reaped, so that init never reaps a supervisor before its own Wait does
// (see reapStrays). It is safe for concurrent use.
type supervisors struct {
	// self is this binary, re-executed as "self supervise".
	self string
	log  *slog.Logger

	mu       sync.Mutex
	children map[int]struct{} // supervisors started and not yet reaped

	poolMu sync.Mutex
	idle   []*supervisor // supervisors waiting for a command
}

// newSupervisors returns an empty set of supervisors of the binary self.
func newSupervisors(self string, log *slog.Logger) *supervisors {
	return &supervisors{self: self, log: log, children: map[int]struct{}{}}
}

// spawn starts a supervisor connected by a socketpair.
func (sv *supervisors) spawn() (*supervisor, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("creating a control socket: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "control"), os.NewFile(uintptr(fds[1]), "control")
	defer theirs.Close()
	conn, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		return nil, fmt.Errorf("opening the control socket: %w", err)
	}
	cmd := exec.Command(sv.self, "supervise")
	// One P keeps a supervisor to a few threads: the container's pids
	// limit counts threads, and 16 jobs hold 16 supervisors.
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := sv.startChild(cmd); err != nil {
		conn.Close()
		if errors.Is(err, syscall.EAGAIN) {
			return nil, errors.New("the workspace is at its process limit (threads count too): wait for commands or jobs to end, or stop some (job action=signal)")
		}
		return nil, fmt.Errorf("starting a supervisor: %w", err)
	}
	s := &supervisor{pid: cmd.Process.Pid, ctl: conn.(*net.UnixConn), exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		sv.forgetChild(s.pid)
		conn.Close()
		close(s.exited)
	}()
	return s, nil
}

// take returns an idle supervisor, or a new one.
func (sv *supervisors) take() (*supervisor, error) {
	sv.poolMu.Lock()
	for len(sv.idle) > 0 {
		s := sv.idle[len(sv.idle)-1]
		sv.idle = sv.idle[:len(sv.idle)-1]
		if s.alive() {
			sv.poolMu.Unlock()
			return s, nil
		}
	}
	sv.poolMu.Unlock()
	return sv.spawn()
}

// release puts a supervisor back to wait for work, or lets it
// exit (by closing its socket) when enough are waiting.
func (sv *supervisors) release(s *supervisor) {
	if !s.alive() {
		return
	}
	sv.poolMu.Lock()
	if len(sv.idle) < maxIdleSupervisors {
		sv.idle = append(sv.idle, s)
		sv.poolMu.Unlock()
		return
	}
	sv.poolMu.Unlock()
	s.ctl.Close()
}

// warm starts one supervisor ahead of the first command.
func (sv *supervisors) warm() {
	if s, err := sv.spawn(); err == nil {
		sv.release(s)
	}
}

// closeIdle lets every waiting supervisor exit.
func (sv *supervisors) closeIdle() {
	sv.poolMu.Lock()
	defer sv.poolMu.Unlock()
	for _, s := range sv.idle {
		s.ctl.Close()
	}
	sv.idle = nil
}

// startChild starts cmd and records it as a live supervisor, under the same
// lock the init reaper takes, so the reaper never collects a supervisor
// before cmd.Wait does.
func (sv *supervisors) startChild(cmd *exec.Cmd) error {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	sv.children[cmd.Process.Pid] = struct{}{}
	return nil
}

// forgetChild drops a reaped supervisor from the live ones.
func (sv *supervisors) forgetChild(pid int) {
	sv.mu.Lock()
	delete(sv.children, pid)
	sv.mu.Unlock()
}

// live returns the pids of the supervisors started and not yet reaped.
func (sv *supervisors) live() map[int]struct{} {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return maps.Clone(sv.children)
}
