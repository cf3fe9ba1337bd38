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
	go a.supervisors.warm()
	go a.serveSSHAgent(ctx)

	var (
		mu      sync.Mutex
		current = map[bool]context.CancelFunc{} // by hello.Tunnel
	)
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("accepting channel: %w", err)
		}
		go func() {
			relay := conn.(*net.UnixConn)
			defer relay.Close()
			hello, in, out, err := receiveChannel(relay)
			if err != nil {
				a.log.Warn("channel refused", "err", err)
				return
			}
			defer in.Close()
			defer out.Close()
			// A new channel supersedes the previous one of its kind.
			connCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			mu.Lock()
			if previous := current[hello.Tunnel]; previous != nil {
				a.log.Info("channel superseded", "tunnel", hello.Tunnel)
				previous()
			}
			current[hello.Tunnel] = cancel
			mu.Unlock()
			stop := context.AfterFunc(connCtx, func() {
				in.Close()
				out.Close()
			})
			defer stop()
			if hello.Tunnel {
				err = a.serveTunnel(connCtx, in, out, hello.Direct, hello.Nonce)
			} else {
				err = a.ServeConn(connCtx, struct {
					io.Reader
					io.Writer
				}{in, out})
			}
			if err != nil {
				a.log.Warn("channel ended", "tunnel", hello.Tunnel, "err", err)
			}
		}()
	}
}

// receiveChannel takes the exec session's streams from a relay. Closing
// the relay's connection, once the channel is over, lets the relay, and
// with it the exec session, end.
func receiveChannel(relay *net.UnixConn) (hello channelHello, in, out *os.File, err error) {
	fds, err := receive(relay, &hello)
	if err != nil {
		return hello, nil, nil, fmt.Errorf("receiving the channel: %w", err)
	}
	if len(fds) != 2 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return hello, nil, nil, fmt.Errorf("the relay handed over %d descriptors, want 2", len(fds))
	}
	// Non-blocking, so closing them interrupts a read in progress.
	for _, fd := range fds {
		_ = unix.SetNonblock(fd, true)
	}
	return hello, os.NewFile(uintptr(fds[0]), "channel-in"), os.NewFile(uintptr(fds[1]), "channel-out"), nil
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
		a.supervisors.reapStrays()
	}
}

// reapStrays reaps zombie children of init and kills live ones, except the
// supervisors init started itself. A process only becomes init's child when
// the supervisor above it died (supervisors are subreapers), so it is a
// leftover of a command that is over.
func (sv *supervisors) reapStrays() {
	procs, err := readProcs()
	if err != nil {
		return
	}
	sv.mu.Lock()
	defer sv.mu.Unlock()
	self := os.Getpid()
	for _, p := range procs {
		if p.ppid != self {
			continue
		}
		if _, ours := sv.children[p.pid]; ours {
			continue
		}
		if !p.zombie {
			sv.log.Info("killing stray process", "pid", p.pid)
			_ = unix.Kill(p.pid, unix.SIGKILL)
			continue
		}
		var ws unix.WaitStatus
		_, _ = unix.Wait4(p.pid, &ws, unix.WNOHANG, nil)
	}
}
