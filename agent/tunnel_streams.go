//go:build linux

package agent

import (
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wink-mcp/wink-mcp/wire"
)

// handWait bounds connecting to, greeting, and handing a connection over
// on a tunnel's streams socket; past it the connection takes a stream of
// the tunnel instead.
const handWait = 2 * time.Second

// streamSockets hands each proxied connection of a direct tunnel to the
// server whole: the connection's own descriptor, sent over the tunnel's
// streams socket (wire.TunnelStreamsPath). The server then reads and
// writes the client's socket itself, and the agent neither copies nor
// even sees a byte of it.
type streamSockets struct {
	path, hello string
	mu          sync.Mutex
	ch          *net.UnixConn // nil until dialled, and after a failure
}

func newStreamSockets(nonce string) *streamSockets {
	return &streamSockets{path: wire.TunnelStreamsPath(nonce), hello: fmt.Sprintf(wire.TunnelStreamHello, nonce)}
}

// hand sends c's descriptor to the server as a proxy connection. On
// success the server holds the connection and the caller closes only its
// own descriptor.
func (s *streamSockets) hand(c *net.TCPConn) error { return s.send(c, []byte{0}) }

// handPort sends the descriptor of c, a connection to a previewed port,
// to the server with the token its request named (wire.PortHandRequest).
func (s *streamSockets) handPort(c *net.TCPConn, token string) error {
	return s.send(c, append([]byte{wire.PortHandTag}, token...))
}

// send sends c's descriptor to the server with msg as the message's bytes.
func (s *streamSockets) send(c *net.TCPConn, msg []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		ch, err := s.dial()
		if err != nil {
			return err
		}
		s.ch = ch
	}
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var sendErr error
	_ = s.ch.SetWriteDeadline(time.Now().Add(handWait))
	if err := rc.Control(func(fd uintptr) {
		_, _, sendErr = s.ch.WriteMsgUnix(msg, unix.UnixRights(int(fd)), nil)
	}); err != nil {
		sendErr = err
	}
	if sendErr != nil {
		s.ch.Close()
		s.ch = nil
	}
	return sendErr
}

// dial connects to the streams socket and greets the server.
func (s *streamSockets) dial() (*net.UnixConn, error) {
	c, err := net.DialTimeout("unix", s.path, handWait)
	if err != nil {
		return nil, err
	}
	u := c.(*net.UnixConn)
	_ = u.SetWriteDeadline(time.Now().Add(handWait))
	if _, err := io.WriteString(u, s.hello); err != nil {
		u.Close()
		return nil, err
	}
	return u, nil
}

// close ends the streams socket's connection.
func (s *streamSockets) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		s.ch.Close()
		s.ch = nil
	}
}
