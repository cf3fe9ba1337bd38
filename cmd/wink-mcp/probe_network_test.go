package main

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/engine/kubernetes"
)

// TestProbeNetworkExits checks the probe Pod's role: connected to a
// listening address for the whole settle time; blocked where nothing
// answers, and where the first connects get through and the later ones
// do not (an enforcer that writes a new Pod's rules a moment after it
// starts); connected where connects fail for a moment and then get through
// again (an enforcer rewriting the rules of a Pod policies let out); usage
// without an address or with a bad settle time.
func TestProbeNetworkExits(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	open := l.Addr().String()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	shut := closed.Addr().String()
	closed.Close()
	late, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closesLate := late.Addr().String()
	go func() { // the first connect gets through, then the port closes
		if c, err := late.Accept(); err == nil {
			c.Close()
		}
		late.Close()
	}()
	flapping := flappingListener(t)
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"connected", []string{open, "600ms"}, kubernetes.ProbeConnected},
		{"connected after a moment blocked", []string{flapping, "600ms"}, kubernetes.ProbeConnected},
		{"blocked", []string{shut, "10s"}, kubernetes.ProbeBlocked},
		{"blocked after a while", []string{closesLate, "1m"}, kubernetes.ProbeBlocked},
		{"usage", nil, 2},
		{"no settle time", []string{open}, 2},
		{"a bad settle time", []string{open, "soon"}, 2},
	} {
		if got := runProbeNetwork(tc.args, io.Discard, io.Discard); got != tc.want {
			t.Errorf("%s: exit %d; want %d", tc.name, got, tc.want)
		}
	}
}

// TestAwaitCutOffExits checks the cut-off init container's role: it
// succeeds once a connect fails and fails when the connects get through,
// the opposite of the probe's exit codes.
func TestAwaitCutOffExits(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	shut := closed.Addr().String()
	closed.Close()
	var stderr strings.Builder
	if got := runAwaitCutOff([]string{l.Addr().String(), "300ms"}, io.Discard, &stderr); got != 1 || !strings.Contains(stderr.String(), "not cut off") {
		t.Errorf("still connected: exit %d, %q; want 1 saying it is not cut off", got, stderr.String())
	}
	if got := runAwaitCutOff([]string{shut, "10s"}, io.Discard, io.Discard); got != 0 {
		t.Errorf("blocked: exit %d; want 0", got)
	}
	if got := runAwaitCutOff(nil, io.Discard, io.Discard); got != 2 {
		t.Errorf("usage: exit %d; want 2", got)
	}
}

// flappingListener returns an address that takes a connect, refuses them
// for half of kubernetes.ProbeConfirm, then takes them again.
func flappingListener(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	reopened := make(chan net.Listener, 1)
	t.Cleanup(func() {
		select {
		case again := <-reopened:
			again.Close()
		case <-time.After(2 * time.Second):
		}
	})
	go func() {
		if c, err := l.Accept(); err == nil {
			c.Close()
		}
		l.Close()
		time.Sleep(kubernetes.ProbeConfirm / 2)
		again, err := net.Listen("tcp", addr)
		if err != nil {
			return // the address stays blocked, and the test fails
		}
		reopened <- again
		for {
			c, err := again.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return addr
}
