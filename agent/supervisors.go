//go:build linux

package agent

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"

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

// spawnSupervisor starts a supervisor connected by a socketpair.
func (a *Agent) spawnSupervisor() (*supervisor, error) {
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
	cmd := exec.Command(a.self, "supervise")
	// One P keeps a supervisor to a few threads: the container's pids
	// limit counts threads, and 16 jobs hold 16 supervisors.
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := a.startChild(cmd); err != nil {
		conn.Close()
		if errors.Is(err, syscall.EAGAIN) {
			return nil, errors.New("the workspace is at its process limit (threads count too): wait for commands or jobs to end, or stop some (job action=signal)")
		}
		return nil, fmt.Errorf("starting a supervisor: %w", err)
	}
	s := &supervisor{pid: cmd.Process.Pid, ctl: conn.(*net.UnixConn), exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		a.forgetChild(s.pid)
		conn.Close()
		close(s.exited)
	}()
	return s, nil
}

// takeSupervisor returns an idle supervisor, or a new one.
func (a *Agent) takeSupervisor() (*supervisor, error) {
	a.poolMu.Lock()
	for len(a.idle) > 0 {
		s := a.idle[len(a.idle)-1]
		a.idle = a.idle[:len(a.idle)-1]
		if s.alive() {
			a.poolMu.Unlock()
			return s, nil
		}
	}
	a.poolMu.Unlock()
	return a.spawnSupervisor()
}

// releaseSupervisor puts a supervisor back to wait for work, or lets it
// exit (by closing its socket) when enough are waiting.
func (a *Agent) releaseSupervisor(s *supervisor) {
	if !s.alive() {
		return
	}
	a.poolMu.Lock()
	if len(a.idle) < maxIdleSupervisors {
		a.idle = append(a.idle, s)
		a.poolMu.Unlock()
		return
	}
	a.poolMu.Unlock()
	s.ctl.Close()
}

// warmSupervisor starts one supervisor ahead of the first command.
func (a *Agent) warmSupervisor() {
	if s, err := a.spawnSupervisor(); err == nil {
		a.releaseSupervisor(s)
	}
}

// closeSupervisors lets every waiting supervisor exit.
func (a *Agent) closeSupervisors() {
	a.poolMu.Lock()
	defer a.poolMu.Unlock()
	for _, s := range a.idle {
		s.ctl.Close()
	}
	a.idle = nil
}
