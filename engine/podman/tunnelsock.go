//go:build containers_image_openpgp

package podman

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/wire"
)

// The egress tunnel's faster path on a Podman that shares this machine's
// files: instead of riding an exec session's attached streams (which
// Podman copies through conmon and filters for detach keys), it rides a
// Unix socket the server listens on. Each container gets a directory of
// its own, bind-mounted read-only at wire.TunnelSocketDir and nowhere
// else, under a directory of this machine only the server's user may
// enter (0700): another container has no mount of it, and no other user
// of this machine can reach it. The server listens and the agent's relay
// connects, not the other way round: the container can neither replace
// the socket nor plant another one (the mount is read-only), and the
// server never connects to anything a container could have made. A
// connection counts only if it says the nonce the server handed the relay
// it started for that tunnel; any other (a process of the container that
// connects on its own) is closed, and gains nothing it would not get
// through the proxy anyway: every stream is checked by the server.

// tunnelAcceptWait bounds the wait for the relay to connect.
const tunnelAcceptWait = 10 * time.Second

// tunnelGreetWait bounds the wait for a connection's nonce. The relay
// writes it as soon as it connects, so it is there, or nearly, when the
// connection is accepted; one that says nothing costs no more than this.
const tunnelGreetWait = 500 * time.Millisecond

// maxTunnelGreeters bounds the connections whose nonce is awaited at
// once; more wait for a place (never dropped: one of them may be the
// relay's).
const maxTunnelGreeters = 64

// tunnelSockets are the per-container socket directories under base.
type tunnelSockets struct {
	base string
	mu   sync.Mutex
	open map[string]*net.UnixListener // by container name
}

// tunnelBase is where the sockets' directories are, under cacheDir ("" for none).
func tunnelBase(cacheDir string) string {
	if cacheDir == "" {
		return ""
	}
	return filepath.Join(cacheDir, "tunnels")
}

// newTunnelSockets returns the sockets under base ("" turns them off).
func newTunnelSockets(base string) *tunnelSockets {
	if base == "" {
		return nil
	}
	return &tunnelSockets{base: base, open: map[string]*net.UnixListener{}}
}

// dir is the directory of container name's socket: short, so the
// socket's path stays within a Unix address's 108 bytes.
func (t *tunnelSockets) dir(name string) string {
	sum := sha256.Sum256([]byte(name))
	return filepath.Join(t.base, hex.EncodeToString(sum[:8]))
}

// prepare makes container name's directory (its parent 0700, itself 0755
// so that the container's user, whoever it maps to, may enter it through
// the mount) and returns it.
func (t *tunnelSockets) prepare(name string) (string, error) {
	if err := os.MkdirAll(t.base, 0o700); err != nil {
		return "", fmt.Errorf("making the tunnel sockets' directory: %w", err)
	}
	if err := os.Chmod(t.base, 0o700); err != nil {
		return "", err
	}
	dir := t.dir(name)
	if len(filepath.Join(dir, filepath.Base(wire.TunnelSocketPath))) > 100 {
		return "", fmt.Errorf("the tunnel's socket path under %s is too long for a Unix socket", t.base)
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("making the tunnel socket's directory: %w", err)
	}
	return dir, os.Chmod(dir, 0o755)
}

// listener returns the listener of container name's socket, listening
// anew (a process before this one made the directory) when needed; false
// when the container has no socket directory.
func (t *tunnelSockets) listener(name string) (*net.UnixListener, bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ln, ok := t.open[name]; ok {
		return ln, true, nil
	}
	dir := t.dir(name)
	if st, err := os.Lstat(dir); err != nil || !st.IsDir() {
		return nil, false, nil
	}
	path := filepath.Join(dir, filepath.Base(wire.TunnelSocketPath))
	_ = os.Remove(path) // a socket a process before this one left
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, true, fmt.Errorf("listening on the tunnel's socket: %w", err)
	}
	ln.SetUnlinkOnClose(true)
	if err := os.Chmod(path, 0o666); err != nil { // the container's user, whoever it maps to
		ln.Close()
		return nil, true, err
	}
	t.open[name] = ln
	return ln, true, nil
}

// remove closes container name's listener and removes its directory.
func (t *tunnelSockets) remove(name string) {
	t.mu.Lock()
	ln := t.open[name]
	delete(t.open, name)
	t.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
	_ = os.RemoveAll(t.dir(name))
}

// accept returns the first connection on ln that says nonce within
// tunnelAcceptWait; it closes the others.
func accept(ctx context.Context, ln *net.UnixListener, nonce string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, tunnelAcceptWait)
	defer cancel()
	_ = ln.SetDeadline(time.Now().Add(tunnelAcceptWait))
	defer ln.SetDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { _ = ln.SetDeadline(time.Now()) })
	defer stop()
	want := fmt.Sprintf(wire.TunnelSocketHello, nonce)
	won := make(chan net.Conn, 1)
	greeters := make(chan struct{}, maxTunnelGreeters)
	for {
		select {
		case c := <-won:
			return c, nil
		default:
		}
		c, err := ln.Accept()
		if err != nil {
			select {
			case c := <-won:
				return c, nil
			default:
			}
			return nil, fmt.Errorf("the relay did not connect to the tunnel's socket: %w", err)
		}
		select {
		case greeters <- struct{}{}: // a crowd waits its turn: any of it may be the relay
		case <-ctx.Done():
			c.Close()
			continue
		}
		go func() {
			defer func() { <-greeters }()
			if greeted(c, want) {
				select {
				case won <- c:
					_ = ln.SetDeadline(time.Now()) // wake the Accept above
					return
				default:
				}
			}
			c.Close()
		}()
	}
}

// greeted reads c's first line and says whether it is want.
func greeted(c net.Conn, want string) bool {
	_ = c.SetReadDeadline(time.Now().Add(tunnelGreetWait))
	defer c.SetReadDeadline(time.Time{})
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil {
		return false
	}
	return subtle.ConstantTimeCompare(got, []byte(want)) == 1
}

// newNonce returns a random nonce for one tunnel.
func newNonce() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// socketTunnel is a tunnel over the socket, and the exec session of its
// relay, which lasts as long as it.
type socketTunnel struct {
	net.Conn
	relay   io.Closer
	dir     string
	streams *tunnelStreams
}

// ViaSocket names the socket's directory (engine.SocketTunnel).
func (s *socketTunnel) ViaSocket() string { return s.dir }

// Streams is the listener of the proxied connections' own sockets
// (engine.SocketTunnel).
func (s *socketTunnel) Streams() net.Listener { return s.streams }

// Ports takes the port previews' connections handed over on the same
// socket (engine.SocketTunnel).
func (s *socketTunnel) Ports() engine.PortHandover { return &s.streams.ports }

// Close closes the socket and its streams, then the relay's exec session.
func (s *socketTunnel) Close() error {
	err := errors.Join(s.Conn.Close(), s.streams.Close())
	return errors.Join(err, s.relay.Close())
}

var _ engine.SocketTunnel = (*socketTunnel)(nil)
