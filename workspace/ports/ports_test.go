package ports

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/hashicorp/yamux"
)

// newTestRoom returns a room whose tunnel is never dialled: the tests open
// ports and list them, and no request reaches the previews.
func newTestRoom(t *testing.T) *Room {
	t.Helper()
	r := New(Deps{
		Tunnel:  func(context.Context) (*yamux.Session, error) { return nil, nil },
		Life:    context.Background(),
		Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		Session: func() string { return "test" },
		Closed:  errTestClosed,
	})
	t.Cleanup(r.CloseAll)
	return r
}

// errTestClosed is the test room's Deps.Closed.
var errTestClosed = errors.New("the session has ended")

func TestRoomOpenListClose(t *testing.T) {
	r := newTestRoom(t)
	for _, port := range []int{8080, 3000, 8080} {
		if _, _, err := r.OpenPort(context.Background(), port); err != nil {
			t.Fatalf("opening port %d: %v", port, err)
		}
	}
	open := r.Ports()
	if len(open) != 2 || open[0].Port != 3000 || open[1].Port != 8080 {
		t.Fatalf("open ports = %+v, want 3000 and 8080 in order", open)
	}
	if left, err := r.ClosePort(3000); err != nil || len(left) != 1 || left[0].Port != 8080 {
		t.Fatalf("closing 3000 = %+v, %v; want 8080 left", left, err)
	}
	if _, err := r.ClosePort(3000); err == nil {
		t.Fatal("closing a port that is not open succeeded")
	}
}

func TestRoomRefusesBadPortsAndTooMany(t *testing.T) {
	r := newTestRoom(t)
	for _, port := range []int{0, -1, 65536} {
		if _, _, err := r.OpenPort(context.Background(), port); err == nil {
			t.Errorf("opening port %d succeeded", port)
		}
	}
	for port := 1; port <= MaxPorts; port++ {
		if _, _, err := r.OpenPort(context.Background(), 9000+port); err != nil {
			t.Fatalf("opening port %d of %d: %v", port, MaxPorts, err)
		}
	}
	if _, open, err := r.OpenPort(context.Background(), 9999); !errors.Is(err, ErrTooManyPorts) || len(open) != MaxPorts {
		t.Fatalf("opening one port past %d = %d open, %v; want ErrTooManyPorts", MaxPorts, len(open), err)
	}
}

func TestRoomClosedForGood(t *testing.T) {
	r := newTestRoom(t)
	if _, _, err := r.OpenPort(context.Background(), 8080); err != nil {
		t.Fatal(err)
	}
	r.CloseAll()
	if open := r.Ports(); len(open) != 0 {
		t.Fatalf("ports after CloseAll = %+v, want none", open)
	}
	if _, _, err := r.OpenPort(context.Background(), 8080); !errors.Is(err, errTestClosed) {
		t.Fatalf("opening after CloseAll = %v, want Deps.Closed", err)
	}
}

func TestRoomTunnelFailure(t *testing.T) {
	want := errors.New("no container")
	r := New(Deps{Tunnel: func(context.Context) (*yamux.Session, error) { return nil, want },
		Life: context.Background(), Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Session: func() string { return "test" }})
	if _, _, err := r.OpenPort(context.Background(), 8080); !errors.Is(err, want) {
		t.Fatalf("opening with no tunnel = %v, want the tunnel's error", err)
	}
	if open := r.Ports(); len(open) != 0 {
		t.Fatalf("ports after a failed open = %+v, want none", open)
	}
}
