//go:build containers_image_openpgp

package podman

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"

	"github.com/wink-mcp/wink-mcp/wire"
)

// tunnelStreams is the listener of one socket tunnel's streams socket
// (wire.TunnelStreamsPath): the agent connects to it once for each
// connection made to its proxy, so those bytes need no framing and cross
// the agent in the kernel. A connection counts only if it says the
// tunnel's nonce at once (as the relay's own does); the others are closed.
// Closing the listener, which the tunnel's end does, also closes every
// connection it handed out, so a session's end cuts them as it cuts the
// tunnel's streams.
type tunnelStreams struct {
	ln    *net.UnixListener
	want  string
	ready chan net.Conn
	done  chan struct{}
	once  sync.Once
	mu    sync.Mutex
	open  map[*streamConn]struct{}
}

// listenStreams listens on the streams socket of the tunnel whose nonce is
// nonce, in the host directory dir that is mounted at wire.TunnelSocketDir.
func listenStreams(dir, nonce string) (*tunnelStreams, error) {
	path := filepath.Join(dir, filepath.Base(wire.TunnelStreamsPath(nonce)))
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listening on the tunnel's streams socket: %w", err)
	}
	ln.SetUnlinkOnClose(true)
	if err := os.Chmod(path, 0o666); err != nil { // the container's user, whoever it maps to
		ln.Close()
		return nil, err
	}
	t := &tunnelStreams{ln: ln, want: fmt.Sprintf(wire.TunnelStreamHello, nonce),
		ready: make(chan net.Conn), done: make(chan struct{}), open: map[*streamConn]struct{}{}}
	go t.acceptLoop()
	return t, nil
}

// acceptLoop greets each connection, at most maxTunnelGreeters at once
// (a crowd waits its turn, never dropped), until the listener closes.
func (t *tunnelStreams) acceptLoop() {
	greeters := make(chan struct{}, maxTunnelGreeters)
	for {
		c, err := t.ln.Accept()
		if err != nil {
			t.Close()
			return
		}
		select {
		case greeters <- struct{}{}:
		case <-t.done:
			c.Close()
			return
		}
		go func() {
			defer func() { <-greeters }()
			if !greeted(c, t.want) {
				c.Close()
				return
			}
			sc := &streamConn{UnixConn: c.(*net.UnixConn), t: t}
			_ = sc.SetWriteBuffer(wire.StreamSocketBuffer)
			if !t.track(sc) {
				return
			}
			select {
			case t.ready <- sc:
			case <-t.done:
			}
		}()
	}
}

// track records c as open, or closes it when the listener is closed.
func (t *tunnelStreams) track(c *streamConn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	select {
	case <-t.done:
		c.UnixConn.Close()
		return false
	default:
	}
	t.open[c] = struct{}{}
	return true
}

// Accept returns the next greeted connection.
func (t *tunnelStreams) Accept() (net.Conn, error) {
	select {
	case c := <-t.ready:
		return c, nil
	case <-t.done:
		return nil, net.ErrClosed
	}
}

// Close stops listening and closes every connection handed out.
func (t *tunnelStreams) Close() error {
	t.once.Do(func() {
		t.mu.Lock()
		close(t.done)
		open := t.open
		t.open = nil
		t.mu.Unlock()
		t.ln.Close()
		for c := range open {
			c.UnixConn.Close()
		}
	})
	return nil
}

// Addr is the streams socket's address.
func (t *tunnelStreams) Addr() net.Addr { return t.ln.Addr() }

// streamConn is a connection of a tunnel's streams socket, forgotten by
// its listener when it closes.
type streamConn struct {
	*net.UnixConn
	t *tunnelStreams
}

// Close closes the connection.
func (c *streamConn) Close() error {
	c.t.mu.Lock()
	delete(c.t.open, c)
	c.t.mu.Unlock()
	return c.UnixConn.Close()
}

var _ net.Listener = (*tunnelStreams)(nil)
