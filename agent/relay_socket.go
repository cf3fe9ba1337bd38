//go:build linux

package agent

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/wink-mcp/wink-mcp/wire"
)

// RelaySocket is the relay of a tunnel that rides the socket the server
// listens on at path (wire.TunnelSocketPath, a read-only mount of the
// server's own directory for this container): it connects, says the nonce
// the server gave it (wire.TunnelNonceEnv) so the server knows this
// connection from any other in the container, and hands the connection to
// the agent as the tunnel's both streams, with the nonce, which the agent
// says again on each proxied connection's own socket (see
// wire.TunnelStreamHello). It then lives, as the exec
// session does, as long as the tunnel.
func RelaySocket(ctx context.Context, path, nonce string, dialWait time.Duration) error {
	if nonce == "" {
		return fmt.Errorf("%s is not set: the server starts this relay with a nonce", wire.TunnelNonceEnv)
	}
	c, err := net.DialTimeout("unix", path, dialWait)
	if err != nil {
		return fmt.Errorf("connecting to the tunnel's socket: %w", err)
	}
	sock := c.(*net.UnixConn)
	defer sock.Close()
	if _, err := fmt.Fprintf(sock, wire.TunnelSocketHello, nonce); err != nil {
		return fmt.Errorf("greeting the server on the tunnel's socket: %w", err)
	}
	f, err := sock.File() // a duplicate descriptor, handed over twice
	if err != nil {
		return err
	}
	defer f.Close()
	agent, err := dialAgent(ctx, dialWait)
	if err != nil {
		return err
	}
	defer agent.Close()
	if err := send(agent, channelHello{PID: os.Getpid(), Tunnel: true, Direct: true, Nonce: nonce}, []*os.File{f, f}); err != nil {
		return fmt.Errorf("handing the tunnel to the agent: %w", err)
	}
	f.Close()
	sock.Close()
	_, _ = io.Copy(io.Discard, agent) // returns when the agent closes the connection
	return nil
}
