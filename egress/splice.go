package egress

import (
	"io"
	"net"

	"github.com/wink-mcp/wink-mcp/wire"
)

// spliceChunk is what a CONNECT moves in the kernel between two checks of
// the session's byte cap: as much as one Read of a buffered copy did.
const spliceChunk = 256 << 10

// carryConnect carries a CONNECT's bytes both ways between down (the
// proxy's connection, counted by cc) and upstream, each direction closed
// when its sender is done. When the proxy's connection is a TCP socket
// the agent handed over whole (see engine.SocketTunnel) and upstream is
// TCP, each direction moves in the kernel (splice(2), through
// net.TCPConn's ReadFrom), spliceChunk at a time, counted, with the cap
// checked before each chunk; else it is wire.Splice, which counts each
// read.
func carryConnect(cc *countingConn, down, upstream net.Conn) {
	client, up, ok := kernelPair(cc, upstream)
	if !ok {
		wire.Splice(down, upstream)
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		cc.spliceCounted(client, up)
		_ = client.CloseWrite()
	}()
	cc.spliceCounted(up, client)
	_ = up.CloseWrite()
	<-done
}

// kernelPair returns the TCP sockets under cc and upstream, if both are.
func kernelPair(cc *countingConn, upstream net.Conn) (client, up *net.TCPConn, ok bool) {
	if cc == nil {
		return nil, nil, false
	}
	handed, isHanded := cc.Conn.(interface{ NetConn() net.Conn })
	if !isHanded {
		return nil, nil, false
	}
	client, ok = handed.NetConn().(*net.TCPConn)
	if !ok {
		return nil, nil, false
	}
	up, ok = upstream.(*net.TCPConn)
	return client, up, ok
}

// spliceCounted moves src to dst until src ends, either fails, or the
// session's cap is reached, counting what moves.
func (c *countingConn) spliceCounted(dst, src *net.TCPConn) {
	for !c.over() {
		n, err := dst.ReadFrom(&io.LimitedReader{R: src, N: spliceChunk})
		c.count(int(n))
		if err != nil || n == 0 {
			return
		}
	}
}
