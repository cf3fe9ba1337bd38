package egress

import (
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"testing"
	"time"
)

// handedConn stands for a connection the agent handed over whole.
type handedConn struct{ *net.TCPConn }

func (h handedConn) NetConn() net.Conn { return h.TCPConn }

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (dialled, accepted *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	a, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); a.Close() })
	return c.(*net.TCPConn), a.(*net.TCPConn)
}

// A CONNECT between a handed-over socket and upstream moves every byte
// both ways, in order, counted for the connection and the session, and
// each side sees the other's end.
func TestCarryConnectInTheKernel(t *testing.T) {
	client, proxySide := tcpPair(t)
	upstreamSide, upstream := tcpPair(t)
	s := NewSession(Config{}, "t")
	cc := &countingConn{Conn: handedConn{proxySide}, s: s}
	if _, _, ok := kernelPair(cc, upstreamSide); !ok {
		t.Fatal("a handed-over socket and a TCP upstream are not moved in the kernel")
	}
	if _, _, ok := kernelPair(&countingConn{Conn: proxySide, s: s}, upstreamSide); ok {
		t.Fatal("a connection that was not handed over is moved in the kernel")
	}
	down, up := make([]byte, 5<<20+123), make([]byte, 3<<20+7)
	rand.Read(down)
	rand.Read(up)
	stop := cc.carrying()
	done := make(chan struct{})
	go func() { defer close(done); carryConnect(cc, cc, upstreamSide) }()

	gotUp := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(upstream)
		gotUp <- b
	}()
	go func() { upstream.Write(down); upstream.CloseWrite() }()
	go func() { client.Write(up); client.CloseWrite() }()
	_ = client.SetReadDeadline(time.Now().Add(20 * time.Second))
	gotDown, err := io.ReadAll(client)
	if err != nil || !bytes.Equal(gotDown, down) {
		t.Fatalf("downloaded %d bytes (%v), want the %d sent", len(gotDown), err, len(down))
	}
	if b := <-gotUp; !bytes.Equal(b, up) {
		t.Fatalf("uploaded %d bytes, want the %d sent", len(b), len(up))
	}
	<-done
	stop()
	if want := int64(len(down) + len(up)); cc.total() != want || s.Transferred() != want {
		t.Errorf("counted %d for the connection and %d for the session, want %d", cc.total(), s.Transferred(), want)
	}
}

// The session's byte cap stops a CONNECT moved in the kernel within a
// chunk of it, and the client sees the end.
func TestCarryConnectInTheKernelStopsAtTheCap(t *testing.T) {
	client, proxySide := tcpPair(t)
	upstreamSide, upstream := tcpPair(t)
	const limit = 1 << 20
	s := NewSession(Config{MaxBytes: limit}, "t")
	cc := &countingConn{Conn: handedConn{proxySide}, s: s}
	defer cc.carrying()()
	go carryConnect(cc, cc, upstreamSide)
	go func() { _, _ = upstream.Write(make([]byte, 16<<20)) }()
	_ = client.SetReadDeadline(time.Now().Add(20 * time.Second))
	n, err := io.Copy(io.Discard, client)
	if err != nil {
		t.Fatalf("the client's read: %v; want the end, not a timeout", err)
	}
	if n < limit || n > limit+spliceChunk {
		t.Errorf("the client got %d bytes past a cap of %d; want the cap, and at most a chunk (%d) more", n, limit, spliceChunk)
	}
}
