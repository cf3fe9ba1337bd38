package agent

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"
)

// Relay connects in and out to the agent's socket: what the server writes to
// in reaches the agent, and the agent's answers are written to out. It waits
// up to dialWait for the agent to listen (the relay may start before init is
// ready) and returns when either side closes.
func Relay(ctx context.Context, in io.Reader, out io.Writer, dialWait time.Duration) error {
	conn, err := dialAgent(ctx, dialWait)
	if err != nil {
		return err
	}
	defer conn.Close()
	go func() {
		_, _ = io.Copy(conn, in)
		_ = conn.CloseWrite()
	}()
	if _, err := io.Copy(out, conn); err != nil {
		return fmt.Errorf("relaying agent output: %w", err)
	}
	return nil
}

func dialAgent(ctx context.Context, wait time.Duration) (*net.UnixConn, error) {
	deadline := time.Now().Add(wait)
	addr := &net.UnixAddr{Name: "@" + SocketName, Net: "unix"}
	for {
		conn, err := net.DialUnix("unix", nil, addr)
		if err == nil {
			return conn, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("connecting to the agent at @%s: %w", SocketName, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}
