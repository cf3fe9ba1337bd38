package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// serveHTTP serves s over transport on a free loopback port until the test
// ends, and returns the base URL.
func serveHTTP(t testing.TB, s *Server, transport string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.cfg.HTTP.Addr = ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ServeHTTP(ctx, transport) }()
	t.Cleanup(func() { cancel(); <-done })
	base := "http://" + s.cfg.HTTP.Addr
	for range 100 {
		if c, err := net.Dial("tcp", s.cfg.HTTP.Addr); err == nil {
			c.Close()
			return base
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the server did not listen")
	return ""
}

func httpTestServer(t *testing.T, configure func(*Config)) *Server {
	t.Helper()
	s := newTestServer(t)
	s.cfg.HTTP = DefaultHTTPConfig()
	if configure != nil {
		configure(&s.cfg)
	}
	return s
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`

// initialize opens a streamable HTTP session and returns its id.
func initialize(t testing.TB, base string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+streamablePath, strings.NewReader(initializeBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize: %s, session %q", resp.Status, id)
	}
	return id
}

func request(t *testing.T, method, url, session, body string) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestSessionlessRequestsNeverHoldASlot: GET and DELETE without a session id
// are refused and do not count against --max-sessions, before or after.
func TestSessionlessRequestsNeverHoldASlot(t *testing.T) {
	s := httpTestServer(t, func(c *Config) { c.HTTP.MaxSessions = 2 })
	base := serveHTTP(t, s, TransportHTTP)
	for i := range 10 {
		method := []string{http.MethodGet, http.MethodDelete}[i%2]
		if code := request(t, method, base+streamablePath, "", ""); code != http.StatusBadRequest {
			t.Fatalf("%s without a session: %d, want 400", method, code)
		}
	}
	if n := s.sessions.count(); n != 0 {
		t.Fatalf("%d sessions after session-less requests, want 0", n)
	}
	initialize(t, base)
	initialize(t, base)
	if code := request(t, http.MethodPost, base+streamablePath, "", initializeBody); code != http.StatusServiceUnavailable {
		t.Errorf("a third initialize past the cap of 2: %d, want 503", code)
	}
}

// slowRequest sends headers declaring a 5,000-byte body, then drips it
// (every interval, one byte; 0 sends nothing), and returns how long the
// server took to answer or close the connection.
func slowRequest(t *testing.T, base, method, path, session string, interval time.Duration) time.Duration {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	head := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 5000\r\n",
		method, path, strings.TrimPrefix(base, "http://"))
	if session != "" {
		head += "Mcp-Session-Id: " + session + "\r\n"
	}
	start := time.Now()
	if _, err := io.WriteString(conn, head+"\r\n"); err != nil {
		t.Fatal(err)
	}
	answered := make(chan struct{})
	go func() {
		_, _ = conn.Read(make([]byte, 1)) // an answer, or the connection closed
		close(answered)
	}()
	var drip <-chan time.Time
	if interval > 0 {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		drip = tick.C
	}
	limit := time.After(20 * time.Second)
	for {
		select {
		case <-answered:
			return time.Since(start)
		case <-drip:
			_, _ = conn.Write([]byte(" "))
		case <-limit:
			return time.Since(start)
		}
	}
}

// TestSlowBodiesAreCut sends bodies that never arrive, or arrive a byte at a
// time, to every route of both HTTP transports that takes one: each request
// must end at the body timeout, not hang.
func TestSlowBodiesAreCut(t *testing.T) {
	const timeout = time.Second
	for _, transport := range []string{TransportHTTP, TransportSSE} {
		t.Run(transport, func(t *testing.T) {
			s := httpTestServer(t, func(c *Config) { c.HTTP.BodyTimeout = timeout })
			base := serveHTTP(t, s, transport)
			type route struct{ method, path, session string }
			var routes []route
			if transport == TransportHTTP {
				session := initialize(t, base)
				routes = []route{
					{http.MethodPost, streamablePath, ""},
					{http.MethodPost, streamablePath, session},
					{http.MethodDelete, streamablePath, session},
				}
			} else {
				routes = []route{{http.MethodPost, sseMessagePath(t, base), ""}}
			}
			for _, r := range routes {
				for _, interval := range []time.Duration{0, 200 * time.Millisecond} {
					took := slowRequest(t, base, r.method, r.path, r.session, interval)
					if took > timeout+3*time.Second {
						t.Errorf("%s %s (session %t, a byte every %s): answered after %s, want about %s", r.method, r.path, r.session != "", interval, took.Round(time.Millisecond), timeout)
					}
				}
			}
		})
	}
}

// sseMessagePath opens an SSE stream, kept open until the test ends, and
// returns the message path it announces, with its session id.
func sseMessagePath(t *testing.T, base string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+ssePath, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(data, "sessionId=") {
			return strings.TrimPrefix(data, base)
		}
	}
	t.Fatal("the SSE stream announced no endpoint")
	return ""
}

// TestIdleExpiryWaitsForRequestsInFlight: a streamable HTTP session with a
// request in flight (here an open event stream) outlives the idle timeout;
// once nothing is in flight it ends after the timeout, and a session nobody
// came back to after its initialize goes too.
func TestIdleExpiryWaitsForRequestsInFlight(t *testing.T) {
	const idle = time.Second
	s := httpTestServer(t, func(c *Config) { c.Workspace.IdleTimeout = idle })
	base := serveHTTP(t, s, TransportHTTP)
	session := initialize(t, base)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+streamablePath, nil)
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %s", resp.Status)
	}
	time.Sleep(3 * idle)
	if !s.sessions.owns(session, "") {
		t.Fatal("the session expired while its stream was open")
	}
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(10 * idle)
	for s.sessions.owns(session, "") {
		if time.Now().After(deadline) {
			t.Fatal("the session did not expire once idle")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code := request(t, http.MethodPost, base+streamablePath, session, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); code != http.StatusNotFound {
		t.Errorf("a request of the expired session: %d, want 404", code)
	}
}

// A refused request whose client waits to be told to continue before
// sending its body gets the refusal at once, not after --body-timeout (an
// hour here) spent waiting for the body. The client gives up after 20 s.
func TestRefusalsDoNotWaitForTheBody(t *testing.T) {
	s := httpTestServer(t, func(c *Config) { c.HTTP.MaxSessions, c.HTTP.BodyTimeout = 1, time.Hour })
	base := serveHTTP(t, s, TransportHTTP)
	initialize(t, base)
	host := strings.TrimPrefix(base, "http://")
	for _, tc := range []struct {
		name, host string
		want       int
	}{
		{"past the session cap", host, http.StatusServiceUnavailable},
		{"a foreign Host", "attacker.example", http.StatusForbidden},
	} {
		conn, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 10\r\nExpect: 100-continue\r\n\r\n", tc.host)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil || resp.StatusCode != tc.want {
			t.Errorf("%s, the body held back: %v %v, want %d", tc.name, resp, err, tc.want)
		}
	}
}
