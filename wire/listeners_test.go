package wire

import (
	"errors"
	"net"
	"testing"
	"time"
)

// A joined listener accepts from each of its listeners; when one fails,
// Accept fails and every listener is closed; Close closes them all.
func TestJoinListeners(t *testing.T) {
	listen := func() net.Listener {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	a, b := listen(), listen()
	j := JoinListeners(a, b)
	if j.Addr() != a.Addr() {
		t.Errorf("address %v, want the first's %v", j.Addr(), a.Addr())
	}
	for _, l := range []net.Listener{a, b, b, a} {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		got, err := j.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if got.LocalAddr().String() != l.Addr().String() {
			t.Errorf("accepted on %v, dialled %v", got.LocalAddr(), l.Addr())
		}
		got.Close()
		c.Close()
	}
	b.Close() // one fails: the joined listener fails and closes the other
	done := make(chan error, 1)
	go func() { _, err := j.Accept(); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Accept after a listener failed succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept hung after a listener failed")
	}
	if _, err := a.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("the other listener after the failure: %v, want closed", err)
	}
	if _, err := j.Accept(); err == nil {
		t.Error("a later Accept succeeded")
	}

	c, d := listen(), listen()
	j = JoinListeners(c, d)
	j.Close()
	for _, l := range []net.Listener{c, d} {
		if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
			t.Errorf("after Close: %v, want closed", err)
		}
	}
}
