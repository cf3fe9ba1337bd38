package wire

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestLeadingID(t *testing.T) {
	tests := map[string]uint64{`{"id":7,"result":{}}`: 7, `{"id":123}`: 123}
	for in, want := range tests {
		if got, _, ok := leadingID([]byte(in)); !ok || got != want {
			t.Errorf("leadingID(%s) = %d, %v", in, got, ok)
		}
	}
	for _, bad := range []string{`{"result":1,"id":2}`, `{"id":}`, `{"id":1x}`, `{"id":99999999999999999999,}`, `garbage`} {
		if _, _, ok := leadingID([]byte(bad)); ok {
			t.Errorf("leadingID(%s) accepted", bad)
		}
	}
}

// TestClientRoutesAnswersOutOfOrder answers two calls in reverse order, one
// with an error, from a fake agent at the other end of a pipe.
func TestClientRoutesAnswersOutOfOrder(t *testing.T) {
	toAgent, fromClient := io.Pipe()
	toClient, fromAgent := io.Pipe()
	c := NewClient(toClient, fromClient)
	gotFirst := make(chan struct{})
	go func() {
		r, w := NewReader(toAgent), NewWriter(fromAgent)
		var first, second Request
		_ = r.Next(&first)
		close(gotFirst)
		_ = r.Next(&second)
		_ = w.Write(Response{ID: second.ID, Error: Errorf(CodeNotFound, "no such thing")})
		_ = w.Write(Response{ID: first.ID, Result: PingResult{PID: 42}})
	}()
	results := make(chan error, 1)
	var pong PingResult
	go func() { results <- c.Call(context.Background(), OpPing, nil, &pong) }()
	<-gotFirst // the ping is sent first
	err := c.Call(context.Background(), OpList, PathArgs{}, nil)
	var werr *Error
	if !errors.As(err, &werr) || werr.Code != CodeNotFound {
		t.Errorf("second call: %v", err)
	}
	if err := <-results; err != nil || pong.PID != 42 {
		t.Errorf("first call: %v, pid %d", err, pong.PID)
	}
	fromAgent.Close()
	<-c.Done()
	if err := c.Call(context.Background(), OpPing, nil, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("call after the end: %v", err)
	}
}

func TestClientEndsOnGarbage(t *testing.T) {
	c := NewClient(strings.NewReader("not a frame\n"), io.Discard)
	<-c.Done()
	if !errors.Is(c.Err(), ErrCorruptFrame) {
		t.Errorf("err = %v, want a corrupt frame", c.Err())
	}
	c = NewClient(strings.NewReader(string(appendSum([]byte("not a frame")))), io.Discard)
	<-c.Done()
	if c.Err() == nil || !strings.Contains(c.Err().Error(), "no leading id") {
		t.Errorf("err = %v", c.Err())
	}
}

// fakeAgent reads requests from the client at the other end of two pipes
// and hands each to answer, which writes what it likes.
func fakeAgent(t *testing.T, answer func(Request, *Writer)) (*Client, io.Closer) {
	t.Helper()
	toAgent, fromClient := io.Pipe()
	toClient, fromAgent := io.Pipe()
	go func() {
		r, w := NewReader(toAgent), NewWriter(fromAgent)
		for {
			var req Request
			if r.Next(&req) != nil {
				fromAgent.Close()
				return
			}
			answer(req, w)
		}
	}()
	closer := closeFunc(func() error { toClient.Close(); return fromClient.Close() })
	t.Cleanup(func() { closer.Close() })
	return NewClient(toClient, fromClient), closer
}

type closeFunc func() error

func (f closeFunc) Close() error { return f() }

func TestWatchEndsAChannelThatFroze(t *testing.T) {
	var pings atomic.Int32
	c, closer := fakeAgent(t, func(req Request, w *Writer) {
		if req.Op == OpPing && pings.Add(1) == 1 {
			_ = w.Write(Response{ID: req.ID, Result: PingResult{}}) // then the stream freezes
		}
	})
	c.Watch(10*time.Millisecond, 200*time.Millisecond, closer)
	start := time.Now()
	err := c.Call(context.Background(), OpList, PathArgs{}, nil)
	if !errors.Is(err, ErrSilent) || !errors.Is(err, ErrNotDelivered) {
		t.Fatalf("call on a frozen channel = %v, want ErrSilent and ErrNotDelivered", err)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("the frozen channel was given up after %s", elapsed)
	}
	if pings.Load() < 2 {
		t.Errorf("%d heartbeat pings, want some while the channel was quiet", pings.Load())
	}
}

func TestOnlyUnacknowledgedRequestsAreNotDelivered(t *testing.T) {
	for _, ack := range []bool{false, true} {
		dead := make(chan struct{})
		c, closer := fakeAgent(t, func(req Request, w *Writer) {
			if ack {
				_ = w.Write(Response{ID: req.ID, Ack: true})
			}
			close(dead)
		})
		go func() { <-dead; closer.Close() }() // the channel dies before the answer
		err := c.Call(context.Background(), OpExec, ExecArgs{}, nil)
		if !errors.Is(err, ErrClosed) || errors.Is(err, ErrNotDelivered) != !ack {
			t.Errorf("acked=%v: err = %v", ack, err)
		}
	}
}
