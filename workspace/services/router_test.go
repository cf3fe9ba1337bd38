package services

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"
)

// pipeListener accepts the server ends of net.Pipe pairs.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}
func (l *pipeListener) Close() error   { close(l.done); return nil }
func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{} }

func (l *pipeListener) dial() net.Conn {
	client, server := net.Pipe()
	l.conns <- server
	return client
}

// TestListenerRoutesOnlyServiceRequests: a proxy stream reaches the
// listener's Accept with every byte (those read to tell it apart too); a
// stream naming no service of the room's is answered with the refusal
// and never reaches the proxy.
func TestListenerRoutesOnlyServiceRequests(t *testing.T) {
	room := New(Deps{Log: slog.New(slog.DiscardHandler), Session: func() string { return "s" }})
	under := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
	ln := room.Listener(under)
	defer ln.Close()

	proxied := "CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n"
	go func() {
		c := under.dial()
		_, _ = io.WriteString(c, proxied)
		c.Close()
	}()
	got, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	all, _ := io.ReadAll(got)
	if string(all) != proxied {
		t.Errorf("the proxy got %q, want %q", all, proxied)
	}

	for _, line := range []string{"wink-service other 5432\n", "wink-service db 5432 extra\n", "wink-service \n"} {
		c := under.dial()
		go func() { _, _ = io.WriteString(c, line) }()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		answer, _ := io.ReadAll(c)
		if !strings.HasPrefix(string(answer), "error: ") {
			t.Errorf("%q: answered %q, want a refusal", line, answer)
		}
	}
	if _, err := room.Dial(context.Background(), "other", 5432); err == nil || !strings.Contains(err.Error(), "name: no such service \"other\": the workspace has none") {
		t.Errorf("Dial of no service: %v", err)
	}
	select {
	case c := <-ln.(*routedListener).conns:
		t.Errorf("a service request reached the proxy: %v", c)
	default:
	}
}
