package wire

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
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
	if c.Err() == nil || !strings.Contains(c.Err().Error(), "no leading id") {
		t.Errorf("err = %v", c.Err())
	}
}
