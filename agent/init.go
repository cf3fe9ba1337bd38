//go:build linux

package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// SocketName is the abstract unix socket the agent listens on. Abstract
// sockets live in the container's network namespace: nothing in the
// filesystem can delete or replace it, and nothing outside the container
// can reach it.
const SocketName = "wink-agent"

// reapInterval is how often init looks for orphans even without SIGCHLD.
const reapInterval = time.Second

// RunInit serves the agent as the container's init process until ctx is
// done: it accepts channels on the abstract socket (a new channel supersedes
// the previous one, whose commands are killed), reaps orphaned zombies, and
// kills stray processes left by a supervisor that died. It must run as PID 1:
// the stray rule (any child of PID 1 that is not a supervisor) is only true
// inside a container.
func (a *Agent) RunInit(ctx context.Context) error {
	if os.Getpid() != 1 {
		return errors.New("the agent's init mode must run as PID 1 inside a container")
	}
	// The commands it runs share its user: they must not be able to read its
	// memory or stop it with a signal.
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	shieldFromSignals(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)

	ln, err := net.Listen("unix", "@"+SocketName)
	if err != nil {
		return fmt.Errorf("listening on @%s: %w", SocketName, err)
	}
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	go a.reapLoop(ctx)
	go a.warmSupervisor()

	var (
		mu      sync.Mutex
		current context.CancelFunc
	)
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("accepting channel: %w", err)
		}
		connCtx, cancel := context.WithCancel(ctx)
		mu.Lock()
		if current != nil {
			a.log.Info("channel superseded")
			current()
		}
		current = cancel
		mu.Unlock()
		go func() {
			defer cancel()
			if err := a.serveRelay(connCtx, conn.(*net.UnixConn)); err != nil {
				a.log.Warn("channel ended", "err", err)
			}
		}()
	}
}

// serveRelay takes the exec session's streams from a relay and serves the
// channel on them until it ends or ctx is done; closing the relay's
// connection then lets the relay, and with it the exec session, end.
func (a *Agent) serveRelay(ctx context.Context, relay *net.UnixConn) error {
	defer relay.Close()
	var hello channelHello
	fds, err := receive(relay, &hello)
	if err != nil {
		return fmt.Errorf("receiving the channel: %w", err)
	}
	if len(fds) != 2 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return fmt.Errorf("the relay handed over %d descriptors, want 2", len(fds))
	}
	// Non-blocking, so closing them interrupts a read in progress.
	for _, fd := range fds {
		_ = unix.SetNonblock(fd, true)
	}
	in, out := os.NewFile(uintptr(fds[0]), "channel-in"), os.NewFile(uintptr(fds[1]), "channel-out")
	defer in.Close()
	defer out.Close()
	stop := context.AfterFunc(ctx, func() {
		in.Close()
		out.Close()
	})
	defer stop()
	return a.ServeConn(ctx, struct {
		io.Reader
		io.Writer
	}{in, out})
}

// reapLoop collects orphans on every SIGCHLD and at a steady interval.
func (a *Agent) reapLoop(ctx context.Context) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGCHLD)
	defer signal.Stop(sigs)
	tick := time.NewTicker(reapInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sigs:
		case <-tick.C:
		}
		a.reapStrays()
	}
}

// reapStrays reaps zombie children of init and kills live ones, except the
// supervisors init started itself. A process only becomes init's child when
// the supervisor above it died (supervisors are subreapers), so it is a
// leftover of a command that is over.
func (a *Agent) reapStrays() {
	procs, err := readProcs()
	if err != nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	self := os.Getpid()
	for _, p := range procs {
		if p.ppid != self {
			continue
		}
		if _, ours := a.children[p.pid]; ours {
			continue
		}
		if !p.zombie {
			a.log.Info("killing stray process", "pid", p.pid)
			_ = unix.Kill(p.pid, unix.SIGKILL)
			continue
		}
		var ws unix.WaitStatus
		_, _ = unix.Wait4(p.pid, &ws, unix.WNOHANG, nil)
	}
}
