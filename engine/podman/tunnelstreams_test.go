//go:build containers_image_openpgp && unix

package podman

import (
	"bytes"
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

// The streams socket takes descriptors only from a connection that said
// the tunnel's nonce (another tunnel's nonce, the tunnel's own greeting,
// junk and silence, more of them than it greets at once, are closed), and
// of those only a TCP socket whose local end is the proxy's port on the
// loopback, one a message: a pipe, a connection to another port and a
// message's second descriptor are closed. Closing it removes the socket
// and cuts every connection it handed over.
func TestTunnelStreamsTakeOnlyTheProxysConnections(t *testing.T) {
	dir := t.TempDir()
	nonce, other := newNonce(), newNonce()
	ts, err := listenStreams(dir, nonce)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := net.Listen("tcp", "127.0.0.1:0") // stands for the agent's proxy port
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	ts.port = proxy.Addr().(*net.TCPAddr).Port
	ts.serve()
	path := filepath.Join(dir, filepath.Base(wire.TunnelStreamsPath(nonce)))
	if st, err := os.Stat(path); err != nil || st.Mode()&os.ModeSocket == 0 || st.Mode().Perm() != 0o666 {
		t.Fatalf("the streams socket: %v %v", st, err)
	}
	if wire.TunnelStreamsPath(nonce) == wire.TunnelStreamsPath(other) {
		t.Fatal("two tunnels share a streams socket")
	}
	dial := func(greeting string) *net.UnixConn {
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprint(c, greeting)
		return c.(*net.UnixConn)
	}
	// proxied returns both ends of a connection to the proxy port (the
	// client's, and the accepted one the agent would hand over).
	proxied := func() (client net.Conn, accepted *net.TCPConn) {
		client, err := net.Dial("tcp", proxy.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		a, err := proxy.Accept()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { client.Close(); a.Close() })
		return client, a.(*net.TCPConn)
	}
	send := func(ch *net.UnixConn, files ...*os.File) {
		var fds []int
		for _, f := range files {
			fds = append(fds, int(f.Fd()))
		}
		if _, _, err := ch.WriteMsgUnix([]byte{0}, unix.UnixRights(fds...), nil); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			f.Close() // only the server's descriptor is left
		}
	}
	fileOf := func(c interface{ File() (*os.File, error) }) *os.File {
		f, err := c.File()
		if err != nil {
			t.Fatal(err)
		}
		return f
	}

	var refused []net.Conn
	for range maxTunnelGreeters + 4 {
		refused = append(refused, dial("")) // silent: each costs a greeter until its wait ends
	}
	for _, g := range []string{fmt.Sprintf(wire.TunnelStreamHello, other), fmt.Sprintf(wire.TunnelSocketHello, nonce), string(bytes.Repeat([]byte{0}, 4096))} {
		c := dial(g)
		_, a := proxied()
		f := fileOf(a)
		_, _, _ = c.WriteMsgUnix([]byte{0}, unix.UnixRights(int(f.Fd())), nil) // may fail: the server closed it
		f.Close()
		refused = append(refused, c)
	}
	ch := dial(fmt.Sprintf(wire.TunnelStreamHello, nonce))

	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	send(ch, pr) // a pipe (closed here: pr's Close below is a no-op)
	elsewhere, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer elsewhere.Close()
	notProxy, err := net.Dial("tcp", elsewhere.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer notProxy.Close()
	send(ch, fileOf(notProxy.(*net.TCPConn))) // a connection to another port
	firstClient, first := proxied()
	secondClient, second := proxied()
	send(ch, fileOf(first), fileOf(second)) // two in one message: the first is taken
	first.Close()                           // the server holds its own descriptor
	second.Close()

	got := make(chan net.Conn, 2)
	go func() {
		for {
			c, err := ts.Accept()
			if err != nil {
				return
			}
			got <- c
		}
	}()
	var c net.Conn
	select {
	case c = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("the proxy's connection was not handed over behind the silent greeters")
	}
	if _, err := io.WriteString(firstClient, "GET / HTTP/1.1\r\n"); err != nil {
		t.Fatal(err)
	}
	head := make([]byte, len("GET / HTTP/1.1\r\n"))
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, head); err != nil || string(head) != "GET / HTTP/1.1\r\n" {
		t.Fatalf("what the client sent, read from the handed-over connection: %q %v", head, err)
	}
	select {
	case extra := <-got:
		t.Fatalf("a second connection was handed over: %v", extra.LocalAddr())
	case <-time.After(300 * time.Millisecond):
	}
	for what, r := range map[string]net.Conn{"the second descriptor's client": secondClient} {
		_ = r.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := r.Read(make([]byte, 1)); err == nil || os.IsTimeout(err) {
			t.Errorf("%s: %v; want it closed", what, err)
		}
	}
	for i, r := range refused {
		_ = r.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := r.Read(make([]byte, 1)); err == nil || os.IsTimeout(err) {
			t.Errorf("refused greeter %d: read %d, %v; want it closed", i, n, err)
		}
	}
	ts.Close()
	_ = firstClient.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := firstClient.Read(make([]byte, 1)); err == nil || os.IsTimeout(err) {
		t.Errorf("the client of a handed-over connection after Close: %v; want it cut", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the socket after Close: %v", err)
	}
	if _, err := ts.Accept(); err == nil {
		t.Error("Accept after Close succeeded")
	}
}
