//go:build linux

package agent

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

// channelHello is what a relay sends with the descriptors it hands over.
type channelHello struct {
	PID int `json:"pid"`
	// Tunnel marks the egress tunnel rather than the request channel.
	Tunnel bool `json:"tunnel,omitempty"`
	// Direct marks a tunnel over the server's socket (RelaySocket), whose
	// bytes are not escaped.
	Direct bool `json:"direct,omitempty"`
	// Nonce is a direct tunnel's nonce, which the agent says on each
	// connection it makes to the tunnel's streams socket
	// (wire.TunnelStreamsPath).
	Nonce string `json:"nonce,omitempty"`
}

// Relay hands the agent the exec session's standard input and output, so
// the agent reads the server's requests from them and writes its answers to
// them directly, with no copy in between. It then waits until the agent
// closes the connection: the exec session lasts as long as this process. It
// waits up to dialWait for the agent to listen (the relay may start before
// init is ready). With tunnel, the streams carry the egress tunnel (see
// wire.ProxyPort) instead of requests.
func Relay(ctx context.Context, in, out *os.File, dialWait time.Duration, tunnel bool) error {
	conn, err := dialAgent(ctx, dialWait)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := send(conn, channelHello{PID: os.Getpid(), Tunnel: tunnel}, []*os.File{in, out}); err != nil {
		return fmt.Errorf("handing the channel to the agent: %w", err)
	}
	in.Close()
	out.Close()
	_, _ = io.Copy(io.Discard, conn) // returns when the agent closes the connection
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
