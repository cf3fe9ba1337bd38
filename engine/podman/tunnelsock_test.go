//go:build containers_image_openpgp

package podman

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/wire"
)

// The directories are made as the mount needs them: the parent only the
// server's user may enter, each container's its own; a socket left by a
// process before this one is replaced; removal takes the directory.
func TestTunnelSocketsDirectories(t *testing.T) {
	ts := newTunnelSockets(filepath.Join(t.TempDir(), "tunnels"))
	if _, has, err := ts.listener("c1"); has || err != nil {
		t.Fatalf("a container without a directory: has %v, %v", has, err)
	}
	dir, err := ts.prepare("c1")
	if err != nil {
		t.Fatal(err)
	}
	other, _ := ts.prepare("c2")
	if dir == other || filepath.Dir(dir) != ts.base {
		t.Fatalf("directories %s and %s under %s", dir, other, ts.base)
	}
	for path, want := range map[string]os.FileMode{ts.base: 0o700, dir: 0o755} {
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want %v", path, st.Mode().Perm(), err, want)
		}
	}
	stale := filepath.Join(dir, filepath.Base(wire.TunnelSocketPath))
	if err := os.WriteFile(stale, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ln, has, err := ts.listener("c1")
	if !has || err != nil {
		t.Fatalf("listener: %v %v", has, err)
	}
	if st, err := os.Stat(stale); err != nil || st.Mode()&os.ModeSocket == 0 || st.Mode().Perm() != 0o666 {
		t.Fatalf("the socket: %v %v", st.Mode(), err)
	}
	if again, _, _ := ts.listener("c1"); again != ln {
		t.Fatal("a second listener for one container")
	}
	ts.remove("c1")
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the directory after removal: %v", err)
	}
}

// accept takes the connection that says the nonce, whatever comes before
// it: connections that say another nonce, junk, or nothing at all (more
// of them than it awaits at once); and gives up when none does.
func TestTunnelAcceptTakesTheNonce(t *testing.T) {
	ts := newTunnelSockets(filepath.Join(t.TempDir(), "tunnels"))
	if _, err := ts.prepare("c"); err != nil {
		t.Fatal(err)
	}
	ln, _, err := ts.listener("c")
	if err != nil {
		t.Fatal(err)
	}
	path := ln.Addr().String()
	dial := func(greeting string) net.Conn {
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if greeting != "" {
			fmt.Fprint(c, greeting)
		}
		return c
	}
	for range 3 * maxTunnelGreeters {
		dial("") // says nothing
	}
	dial(fmt.Sprintf(wire.TunnelSocketHello, "wrong"))
	dial(strings.Repeat("\x00", 4096))
	nonce := newNonce()
	relay := dial(fmt.Sprintf(wire.TunnelSocketHello, nonce) + "after")
	got, err := accept(context.Background(), ln, nonce)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := got.Read(buf); err != nil || string(buf) != "after" {
		t.Fatalf("the accepted connection reads %q, %v: not the relay's", buf, err)
	}
	got.Close()
	_ = relay

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := accept(ctx, ln, newNonce()); err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("accept without the relay: %v after %v", err, time.Since(start))
	}
}
