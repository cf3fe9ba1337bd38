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

// maxHandedConns bounds the connections one tunnel's streams socket holds
// open at once (each a descriptor of the server's); past it the server
// stops taking more, and the agent carries the next ones on the tunnel,
// where the proxy's queue and limits answer them as before.
const maxHandedConns = 1024

// tunnelStreams is the listener of one socket tunnel's streams socket
// (wire.TunnelStreamsPath). The agent connects to it, says the tunnel's
// nonce at once (as the relay does on the tunnel's socket; any other
// connection is closed), and then hands over each connection made to its
// proxy whole: the client's TCP socket itself, one descriptor a message.
// The server then reads and writes the client's socket directly; the
// agent is no longer on the data path. Only a TCP socket whose local end
// is the proxy's port on the container's loopback is taken: anything else
// a process could send (a file, a pipe, another socket) is closed unread.
// Closing the listener, which the tunnel's end does, also closes every
// connection it handed out, so a session's end cuts them as it cuts the
// tunnel's streams.
type tunnelStreams struct {
	ln    *net.UnixListener
	want  string
	port  int // the proxy's, wire.ProxyPort
	ready chan net.Conn
	done  chan struct{}
	held  chan struct{} // a place for each connection handed out and open
	once  sync.Once
	mu    sync.Mutex
	open  map[*streamConn]struct{}
	ports portHandovers
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
	t := &tunnelStreams{ln: ln, want: fmt.Sprintf(wire.TunnelStreamHello, nonce), port: wire.ProxyPort, ready: make(chan net.Conn),
		done: make(chan struct{}), held: make(chan struct{}, maxHandedConns), open: map[*streamConn]struct{}{}}
	t.ports.t = t
	return t, nil
}

// serve starts taking connections.
func (t *tunnelStreams) serve() *tunnelStreams {
	go t.acceptLoop()
	return t
}

// acceptLoop greets each connection, at most maxTunnelGreeters at once
// (a crowd waits its turn, never dropped), and takes the connections each
// greeted one hands over, until the listener closes.
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
			ok := greeted(c, t.want)
			<-greeters
			if !ok {
				c.Close()
				return
			}
			t.receive(c.(*net.UnixConn))
		}()
	}
}

// take makes fd a connection and hands it to Accept, if it is the client
// end of a connection to the proxy's port on the container's loopback.
func (t *tunnelStreams) take(fd int) bool {
	c := fdConn(fd)
	if c == nil {
		return false
	}
	tc, ok := c.(*net.TCPConn)
	if addr, _ := c.LocalAddr().(*net.TCPAddr); !ok || addr == nil || addr.Port != t.port || !addr.IP.IsLoopback() {
		c.Close()
		return false
	}
	sc, ok := t.hold(tc)
	if !ok {
		return false
	}
	select {
	case t.ready <- sc:
	case <-t.done: // Close closes it
	}
	return true
}

// takePort gives fd to the port preview that asked for it with token (see
// portHandovers.take).
func (t *tunnelStreams) takePort(fd int, token string) bool {
	return t.ports.take(fdConn(fd), token)
}

// fdConn makes the descriptor fd a connection, nil (fd closed) when it is
// not a socket.
func fdConn(fd int) net.Conn {
	f := os.NewFile(uintptr(fd), "handed")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil
	}
	return c
}

// hold makes tc a connection the listener closes when it closes, unless
// it is closed already (then tc is closed too).
func (t *tunnelStreams) hold(tc *net.TCPConn) (*streamConn, bool) {
	sc := &streamConn{TCPConn: tc, t: t}
	t.mu.Lock()
	defer t.mu.Unlock()
	select {
	case <-t.done:
		tc.Close()
		return nil, false
	default:
	}
	t.open[sc] = struct{}{}
	return sc, true
}

// Accept returns the next connection handed over.
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
			c.TCPConn.Close()
		}
	})
	return nil
}

// Addr is the streams socket's address.
func (t *tunnelStreams) Addr() net.Addr { return t.ln.Addr() }

// streamConn is a proxied connection handed over on a tunnel's streams
// socket, forgotten by its listener, and its place given back, when it
// closes.
type streamConn struct {
	*net.TCPConn
	t    *tunnelStreams
	once sync.Once
}

// NetConn is the client's TCP socket itself, for moving a CONNECT's bytes
// in the kernel (closing stays with Close).
func (c *streamConn) NetConn() net.Conn { return c.TCPConn }

// Close closes the connection.
func (c *streamConn) Close() error {
	c.once.Do(func() {
		c.t.mu.Lock()
		delete(c.t.open, c)
		c.t.mu.Unlock()
		<-c.t.held
	})
	return c.TCPConn.Close()
}

var _ net.Listener = (*tunnelStreams)(nil)
