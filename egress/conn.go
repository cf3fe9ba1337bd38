package egress

import (
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// errCap ends a connection that would carry the session past its byte
// cap, or its client past its egress quota.
var errCap = fmt.Errorf("egress: the session's byte cap (--egress-max-bytes) or its client's egress quota (--quota-egress-bytes) is reached")

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
		c.s.release()
		if c.n.Load() > 0 {
			c.s.counter().ended()
		}
	}
	return c.Conn.Close()
}

var _ io.ReadWriteCloser = (*countingConn)(nil)

// largeBuffers are a forwarded response's copy buffers: 1 MiB, so a
// download takes a quarter of the reads and writes it took with 256 KiB
// (the server's CPU for 100 MB: 33-36 ms with 1 MiB, 42-47 ms with
// 256 KiB), and a CONNECT's two 256 KiB buffers (wire.Splice) cost as
// much.
var largeBuffers = &bufferPool{pool: sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}}

// bufferPool is an httputil.BufferPool over a sync.Pool.
type bufferPool struct{ pool sync.Pool }

func (b *bufferPool) Get() []byte  { return *b.pool.Get().(*[]byte) }
func (b *bufferPool) Put(p []byte) { b.pool.Put(&p) }
