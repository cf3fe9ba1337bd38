//go:build containers_image_openpgp && unix

package podman

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wink-mcp/wink-mcp/wire"
)

// portRig is a streams socket and a greeted connection to it, as the
// agent has, with a server standing for a previewed port.
type portRig struct {
	t    *testing.T
	ts   *tunnelStreams
	ch   *net.UnixConn
	port net.Listener
}

func newPortRig(t *testing.T) *portRig {
	dir := t.TempDir()
	nonce := newNonce()
	ts, err := listenStreams(dir, nonce)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.Close() })
	ts.serve()
	c, err := net.Dial("unix", filepath.Join(dir, filepath.Base(wire.TunnelStreamsPath(nonce))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, wire.TunnelStreamHello, nonce)
	port, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { port.Close() })
	return &portRig{t: t, ts: ts, ch: c.(*net.UnixConn), port: port}
}

// dialPort connects to the rig's port as the agent does and returns the
// agent's end and the server's accepted end.
func (r *portRig) dialPort(addr string) (*net.TCPConn, net.Conn) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { c.Close() })
	if addr != r.port.Addr().String() {
		return c.(*net.TCPConn), nil
	}
	a, err := r.port.Accept()
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { a.Close() })
	return c.(*net.TCPConn), a
}

// hand sends c's descriptor with msg as the agent does, and closes the
// agent's own.
func (r *portRig) hand(msg []byte, c interface {
	File() (*os.File, error)
	Close() error
}) {
	f, err := c.File()
	if err != nil {
		r.t.Fatal(err)
	}
	if _, _, err := r.ch.WriteMsgUnix(msg, unix.UnixRights(int(f.Fd())), nil); err != nil {
		r.t.Fatal(err)
	}
	f.Close()
	c.Close()
}

func portPort(l net.Listener) int { return l.Addr().(*net.TCPAddr).Port }

// A port preview's hand-over gives the server the agent's own connection
// to the port, only under the token of a request the server made and only
// when the socket is a connection to that request's port: a connection
// to another port, a pipe, an unknown token (a process guessing one) and
// a proxy-shaped message carrying it are refused, the request told at
// once; the tunnel's end cuts a handed connection.
func TestPortHandoverTakesOnlyTheRequestedConnection(t *testing.T) {
	r := newPortRig(t)
	ports := &r.ts.ports
	await := func(a func(context.Context) (net.Conn, error)) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		return a(ctx)
	}

	// Another port's connection under the right token.
	elsewhere, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer elsewhere.Close()
	token, wait, cancel := ports.Expect(portPort(r.port))
	other, _ := r.dialPort(elsewhere.Addr().String())
	r.hand(append([]byte{wire.PortHandTag}, token...), other)
	if c, err := await(wait); c != nil || err == nil || err == context.DeadlineExceeded {
		t.Errorf("a connection to another port: %v %v; want a refusal at once", c, err)
	}
	cancel()

	// A pipe under the right token.
	token, wait, cancel = ports.Expect(portPort(r.port))
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	if _, _, err := r.ch.WriteMsgUnix(append([]byte{wire.PortHandTag}, token...), unix.UnixRights(int(pr.Fd())), nil); err != nil {
		t.Fatal(err)
	}
	pr.Close()
	if c, err := await(wait); c != nil || err == nil {
		t.Errorf("a pipe: %v %v; want a refusal", c, err)
	}
	cancel()

	// A guessed token, and the right token in a proxy's message.
	token, wait, cancel = ports.Expect(portPort(r.port))
	guessed, guessedServer := r.dialPort(r.port.Addr().String())
	r.hand(append([]byte{wire.PortHandTag}, newNonce()...), guessed)
	asProxy, asProxyServer := r.dialPort(r.port.Addr().String())
	r.hand([]byte{0}, asProxy)
	for what, c := range map[string]net.Conn{"a guessed token's": guessedServer, "a proxy message's": asProxyServer} {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("%s connection, at the port's end: %v; want it closed", what, err)
		}
	}

	// The request's own connection, still waiting.
	agentEnd, server := r.dialPort(r.port.Addr().String())
	r.hand(append([]byte{wire.PortHandTag}, token...), agentEnd)
	c, err := await(wait)
	if err != nil {
		t.Fatalf("the requested connection: %v", err)
	}
	cancel()
	if _, err := io.WriteString(server, "HTTP/1.1 200 OK\r\n"); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len("HTTP/1.1 200 OK\r\n"))
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "HTTP/1.1 200 OK\r\n" {
		t.Fatalf("the port's answer through the handed connection: %q %v", got, err)
	}

	// A token is good once.
	again, againServer := r.dialPort(r.port.Addr().String())
	r.hand(append([]byte{wire.PortHandTag}, token...), again)
	_ = againServer.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := againServer.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("a token's second hand-over: %v; want it closed", err)
	}

	r.ts.Close()
	_ = server.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := server.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("a handed connection after the tunnel's end: %v; want it cut", err)
	}
	if _, wait, cancel := ports.Expect(portPort(r.port)); true {
		if _, err := await(wait); err == nil {
			t.Error("a request after the tunnel's end got a connection")
		}
		cancel()
	}
}

// A flood of hand-overs under unknown tokens, many times the tunnel's
// cap, takes no place: each is closed, and a request's own connection
// still comes after it.
func TestPortHandoverFloodTakesNoPlace(t *testing.T) {
	r := newPortRig(t)
	flood := maxHandedConns + 100
	var servers []net.Conn
	for i := range flood {
		c, s := r.dialPort(r.port.Addr().String())
		r.hand(append([]byte{wire.PortHandTag}, newNonce()...), c)
		if i%64 == 0 {
			servers = append(servers, s)
		} else {
			s.Close()
		}
	}
	token, wait, cancel := r.ts.ports.Expect(portPort(r.port))
	defer cancel()
	c, _ := r.dialPort(r.port.Addr().String())
	r.hand(append([]byte{wire.PortHandTag}, token...), c)
	ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	got, err := wait(ctx)
	if err != nil {
		t.Fatalf("the request's connection after %d unknown hand-overs: %v", flood, err)
	}
	got.Close()
	for i, s := range servers {
		_ = s.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := s.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("flooded connection %d at the port's end: %v; want it closed", i*64, err)
		}
	}
	// The one place left is the reader's, taken for the next message.
	n := len(r.ts.held)
	for deadline := time.Now().Add(2 * time.Second); n != 1 && time.Now().Before(deadline); n = len(r.ts.held) {
		time.Sleep(10 * time.Millisecond)
	}
	if n != 1 {
		t.Errorf("places held after the flood and the request's connection closed: %d, want 1", n)
	}
}
