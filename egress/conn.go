package egress

import (
	"fmt"
	"io"
	"net"
	"sync/atomic"

	"github.com/wink-mcp/wink-mcp/wire"
)

// limitedListener counts a session's open connections and turns away those
// past MaxConns with an answer, not a hang.
type limitedListener struct {
	net.Listener
	s *Session
}

func (l *limitedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if n := l.s.open.Add(1); n > MaxConns {
			l.s.open.Add(-1)
			go l.s.turnAway(c)
			continue
		}
		return &countingConn{Conn: c, s: l.s}, nil
	}
}

// turnAway answers a connection past the session's limit and closes it.
func (s *Session) turnAway(c net.Conn) {
	body := fmt.Sprintf("wink-mcp egress proxy: this session already has %d proxy connections open, the most it may; close some and try again.\n", MaxConns)
	wire.Refuse(c, fmt.Sprintf("HTTP/1.1 429 Too Many Requests\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body))
	s.cfg.Log.Info("egress refused", "event", "egress", "session", s.sessionID(), "allowed", false, "status", 429,
		"reason", "too many connections", "bytes", 0)
}

// errCap ends a connection that would carry the session past its byte cap.
var errCap = fmt.Errorf("egress: the session's byte cap (--egress-max-bytes) is reached")

// countingConn adds what a connection carries to its session's count and,
// while it carries a tunnel or a forwarded request (enforce), stops once
// the session's cap is reached; the proxy's own answers always get out.
type countingConn struct {
	net.Conn
	s       *Session
	n       atomic.Int64
	closed  atomic.Bool
	enforce atomic.Bool
}

func (c *countingConn) over() bool {
	return c.enforce.Load() && c.s.counter().over()
}

func (c *countingConn) Read(p []byte) (int, error) {
	if c.over() {
		return 0, errCap
	}
	n, err := c.Conn.Read(p)
	c.count(n)
	return n, err
}

func (c *countingConn) Write(p []byte) (int, error) {
	if c.over() {
		return 0, errCap
	}
	n, err := c.Conn.Write(p)
	c.count(n)
	return n, err
}

func (c *countingConn) count(n int) {
	c.n.Add(int64(n))
	c.s.counter().add(n)
}

// total is what the connection has carried so far (0 for nil).
func (c *countingConn) total() int64 {
	if c == nil {
		return 0
	}
	return c.n.Load()
}

// carrying turns the cap on (for nil, nothing) and returns what turns it off.
func (c *countingConn) carrying() func() {
	if c == nil {
		return func() {}
	}
	c.enforce.Store(true)
	return func() { c.enforce.Store(false) }
}

// CloseWrite half-closes the connection when the stream under it can.
func (c *countingConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}

func (c *countingConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.s.open.Add(-1)
		if c.n.Load() > 0 {
			c.s.counter().ended()
		}
	}
	return c.Conn.Close()
}

var _ io.ReadWriteCloser = (*countingConn)(nil)
