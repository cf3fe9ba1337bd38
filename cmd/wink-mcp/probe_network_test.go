package main

import (
	"io"
	"net"
	"testing"

	"github.com/wink-mcp/wink-mcp/engine/kubernetes"
)

// TestProbeNetworkExits checks the probe Pod's role: connected to a
// listening address, blocked where nothing answers, usage without one.
func TestProbeNetworkExits(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	open := l.Addr().String()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	shut := closed.Addr().String()
	closed.Close()
	defer l.Close()
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"connected", []string{open}, kubernetes.ProbeConnected},
		{"blocked", []string{shut}, kubernetes.ProbeBlocked},
		{"usage", nil, 2},
	} {
		if got := runProbeNetwork(tc.args, io.Discard, io.Discard); got != tc.want {
			t.Errorf("%s: exit %d; want %d", tc.name, got, tc.want)
		}
	}
}
