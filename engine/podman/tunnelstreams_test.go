//go:build containers_image_openpgp

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

	"github.com/wink-mcp/wink-mcp/wire"
)

// The streams socket hands over only connections that say the tunnel's
// nonce, with the bytes after the greeting intact; another tunnel's
// nonce, junk and silence (more of them than it greets at once) are
// closed unaccepted; closing it removes the socket and cuts every
// connection it handed over.
func TestTunnelStreamsTakeOnlyTheNonce(t *testing.T) {
	dir := t.TempDir()
	nonce, other := newNonce(), newNonce()
	ts, err := listenStreams(dir, nonce)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, filepath.Base(wire.TunnelStreamsPath(nonce)))
	if st, err := os.Stat(path); err != nil || st.Mode()&os.ModeSocket == 0 || st.Mode().Perm() != 0o666 {
		t.Fatalf("the streams socket: %v %v", st, err)
	}
	if wire.TunnelStreamsPath(nonce) == wire.TunnelStreamsPath(other) {
		t.Fatal("two tunnels share a streams socket")
	}
	dial := func(greeting string) net.Conn {
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprint(c, greeting)
		return c
	}
	var refused []net.Conn
	for range maxTunnelGreeters + 4 {
		refused = append(refused, dial("")) // silent: each costs a greeter until its wait ends
	}
	refused = append(refused, dial(fmt.Sprintf(wire.TunnelStreamHello, other)), dial(fmt.Sprintf(wire.TunnelSocketHello, nonce)),
		dial(string(bytes.Repeat([]byte{0}, 4096))))
	good := dial(fmt.Sprintf(wire.TunnelStreamHello, nonce) + "GET / HTTP/1.1\r\n")

	got := make(chan net.Conn, 1)
	go func() {
		c, err := ts.Accept()
		if err != nil {
			t.Error(err)
		}
		got <- c
	}()
	var c net.Conn
	select {
	case c = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("the greeted connection was not handed over behind the silent ones")
	}
	head := make([]byte, len("GET / HTTP/1.1\r\n"))
	if _, err := io.ReadFull(c, head); err != nil || string(head) != "GET / HTTP/1.1\r\n" {
		t.Fatalf("after the greeting: %q %v", head, err)
	}
	for i, r := range refused {
		_ = r.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := r.Read(make([]byte, 1)); err == nil || os.IsTimeout(err) {
			t.Errorf("refused connection %d: read %d, %v; want it closed", i, n, err)
		}
	}
	ts.Close()
	_ = good.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := good.Read(make([]byte, 1)); err == nil || os.IsTimeout(err) {
		t.Errorf("a handed-over connection after Close: %v; want it cut", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the socket after Close: %v", err)
	}
	if _, err := ts.Accept(); err == nil {
		t.Error("Accept after Close succeeded")
	}
}
