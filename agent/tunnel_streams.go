//go:build linux

package agent

import (
	"fmt"
	"io"
	"net"
	"time"

	"github.com/wink-mcp/wink-mcp/wire"
)

// streamDialWait bounds connecting to, and greeting, a tunnel's streams
// socket; past it the connection takes a stream of the tunnel instead.
const streamDialWait = 2 * time.Second

// streamSockets connects each proxied connection of a direct tunnel to
// the server on a Unix connection of its own (wire.TunnelStreamsPath),
// so its bytes cross between the two sockets in the kernel (splice)
// instead of being framed, copied and unframed on the tunnel.
type streamSockets struct {
	path, hello string
}

func newStreamSockets(nonce string) *streamSockets {
	return &streamSockets{path: wire.TunnelStreamsPath(nonce), hello: fmt.Sprintf(wire.TunnelStreamHello, nonce)}
}

// dial connects to the streams socket and greets the server.
func (s *streamSockets) dial() (*net.UnixConn, error) {
	c, err := net.DialTimeout("unix", s.path, streamDialWait)
	if err != nil {
		return nil, err
	}
	u := c.(*net.UnixConn)
	_ = u.SetWriteBuffer(wire.StreamSocketBuffer)
	_ = u.SetWriteDeadline(time.Now().Add(streamDialWait))
	if _, err := io.WriteString(u, s.hello); err != nil {
		u.Close()
		return nil, err
	}
	_ = u.SetWriteDeadline(time.Time{})
	return u, nil
}

// spliceInKernel carries bytes both ways between c and u until both
// directions are done, closing each write side when its sender is done.
// io.Copy between a TCP and a Unix stream socket splices on Linux
// (TCPConn's ReadFrom and WriteTo): the bytes never enter this process.
func spliceInKernel(c *net.TCPConn, u *net.UnixConn) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(u, c)
		_ = u.CloseWrite()
	}()
	_, _ = io.Copy(c, u)
	_ = c.CloseWrite()
	<-done
}
