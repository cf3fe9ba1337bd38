package egress

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// streamServer answers every request with an endless body, so a
// download is open when the test narrows the policy.
func streamServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/small" {
			io.WriteString(w, "ok")
			return
		}
		chunk := []byte(strings.Repeat("x", 32<<10))
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			time.Sleep(time.Millisecond)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A dropped pattern refuses new connections, naming the drop, and cuts the
// download it carried; the other pattern still works until a lock, which
// refuses it too, naming the lock.
func TestNarrowingDropThenLock(t *testing.T) {
	a, b := streamServer(t), streamServer(t)
	aAddr, bAddr := a.Listener.Addr().String(), b.Listener.Addr().String()
	s, proxy := startProxy(t, []string{aAddr, bAddr}, 0, nil)
	c := clientVia(proxy, nil)
	c.Timeout = 0

	resp, err := c.Get(a.URL + "/endless")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadFull(resp.Body, make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	cut, err := s.Drop(aAddr)
	if err != nil || cut != 1 {
		t.Fatalf("Drop: cut %d, %v", cut, err)
	}
	done := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, resp.Body); done <- err }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the open download went on after its pattern was dropped")
	}
	if code, body := get(t, c, a.URL+"/small"); code != 403 || !strings.Contains(body, aAddr+" was dropped for the rest of this session (workspace_egress drop)") {
		t.Fatalf("after the drop: %d %q", code, body)
	}
	if code, body := get(t, c, b.URL+"/small"); code != 200 || body != "ok" {
		t.Fatalf("the other pattern after the drop: %d %q", code, body)
	}
	grants := s.Grants()
	if len(grants) != 2 || !grants[0].Dropped || grants[1].Dropped {
		t.Fatalf("grants: %+v", grants)
	}
	s.narrowing().Lock()
	if code, body := get(t, c, b.URL+"/small"); code != 403 || !strings.Contains(body, "egress is locked for the rest of this session (workspace_egress lock)") {
		t.Fatalf("after the lock: %d %q", code, body)
	}
}

// Dropping a pattern the session does not have names those it has; a
// wildcard's drop does not leave an exact pattern for the same host.
func TestNarrowingDropUnknown(t *testing.T) {
	s, _ := startProxy(t, []string{"a.example.com", "*.example.com"}, 0, nil)
	if _, err := s.Drop("b.example.com"); err == nil || !strings.Contains(err.Error(), "drop one of: a.example.com, *.example.com") {
		t.Fatalf("Drop of an unknown pattern: %v", err)
	}
	if _, err := s.Drop("*.example.com"); err != nil {
		t.Fatal(err)
	}
	if _, f := s.vet(context.Background(), "c.example.com", 443); f == nil || !strings.Contains(f.reason, "*.example.com was dropped") {
		t.Fatalf("a host only the dropped wildcard allowed: %+v", f)
	}
	// a.example.com is still allowed by its exact pattern (the resolver of
	// the test knows no name, so it fails there, past the policy).
	if _, f := s.vet(context.Background(), "a.example.com", 443); f == nil || !strings.Contains(f.reason, "does not resolve") {
		t.Fatalf("the exact pattern after the wildcard's drop: %+v", f)
	}
}

// A host the user allowed when asked can be dropped, and is then refused
// without asking again.
func TestNarrowingDropsAnAnswer(t *testing.T) {
	asked := 0
	s := NewSession(Config{Ask: func(context.Context, string, int) (bool, error) { asked++; return true, nil }}, "t")
	if _, f := s.vet(context.Background(), "127.0.0.1", 443); f == nil || !strings.Contains(f.reason, "loopback") {
		t.Fatalf("the first connection: %+v", f)
	}
	g := s.Grants()
	if len(g) != 1 || g[0].Pattern != "127.0.0.1:443" || g[0].Source != AskedSource {
		t.Fatalf("grants: %+v", g)
	}
	if _, err := s.Drop("127.0.0.1:443"); err != nil {
		t.Fatal(err)
	}
	if _, f := s.vet(context.Background(), "127.0.0.1", 443); f == nil || !strings.Contains(f.reason, "was dropped") || asked != 1 {
		t.Fatalf("after the drop: %+v, asked %d times", f, asked)
	}
}

// A crowd of connections being checked and carried while patterns are
// dropped and egress locked: none gets through after the lock, every
// carried one is cut, and nothing races (go test -race).
func TestNarrowingUnderConnections(t *testing.T) {
	var addrs []string
	var servers []*httptest.Server
	for range 4 {
		srv := streamServer(t)
		servers = append(servers, srv)
		addrs = append(addrs, srv.Listener.Addr().String())
	}
	s, proxy := startProxy(t, addrs, 0, nil)
	c := clientVia(proxy, nil)
	c.Timeout = 0
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u := servers[i%len(servers)].URL + "/endless"
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
				resp, err := c.Do(req)
				if err != nil {
					continue
				}
				_, _ = io.CopyN(io.Discard, resp.Body, 256<<10)
				resp.Body.Close()
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	for _, a := range addrs[:2] {
		if _, err := s.Drop(a); err != nil {
			t.Fatal(err)
		}
	}
	s.narrowing().Lock()
	// Whatever was in flight at the lock is cut or refused; from here no
	// connection gets a byte.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		s.narrowing().mu.Lock()
		live := len(s.narrowing().live)
		s.narrowing().mu.Unlock()
		if live != 0 {
			errs <- fmt.Errorf("%d connections tracked after the lock", live)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, srv := range servers {
		if code, body := get(t, c, srv.URL+"/small"); code != 403 || !strings.Contains(body, "locked") {
			t.Errorf("after the lock: %d %q", code, body)
		}
	}
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A connection intercepted for a credential is cut by a lock like any
// other, and the next CONNECT to its host is refused naming the lock.
func TestNarrowingCutsAnInterceptedConnection(t *testing.T) {
	rig := newMitmRig(t, nil)
	tc, err := rig.tunnel(t, rig.credHost, "example.com")
	if err != nil {
		t.Fatal(err)
	}
	if cut := rig.session.narrowing().Lock(); cut != 1 {
		t.Fatalf("the lock cut %d connections, want the intercepted one", cut)
	}
	_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := tc.Read(make([]byte, 1)); err == nil {
		t.Fatal("the intercepted connection still reads after the lock")
	}
	_, body := rawCONNECT(t, rig.proxy, rig.credHost)
	if !strings.Contains(body, "egress is locked") {
		t.Fatalf("a CONNECT after the lock: %q", body)
	}
}

// rawCONNECT sends a CONNECT to hostPort through proxy and returns the
// answer's status line and body.
func rawCONNECT(t *testing.T, proxy, hostPort string) (string, string) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(proxy, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", hostPort, hostPort)
	all, _ := io.ReadAll(c)
	status, body, _ := strings.Cut(string(all), "\r\n\r\n")
	return status, body
}

// What a Narrowing took is recorded sorted, taken again by another (a
// later session on a kept workspace) with the open connections it no
// longer allows cut, and never given back by taking less.
func TestNarrowingTakenAndTakenAgain(t *testing.T) {
	first := NewNarrowing()
	first.drop("b.example")
	first.drop("a.example")
	got := first.Taken()
	if got.Locked || !slices.Equal(got.Dropped, []string{"a.example", "b.example"}) {
		t.Fatalf("taken = %+v", got)
	}
	next := NewNarrowing()
	cuts := 0
	forgetA, ok := next.track(Rule{Pattern: "a.example"}, func() { cuts++ })
	if !ok {
		t.Fatal("a.example refused before anything was taken")
	}
	defer forgetA()
	if _, ok := next.track(Rule{Pattern: "c.example"}, func() { cuts += 100 }); !ok {
		t.Fatal("c.example refused before anything was taken")
	}
	if n := next.Take(got); n != 1 || cuts != 1 {
		t.Errorf("taking the record cut %d (cuts %d), want the a.example connection only", n, cuts)
	}
	if _, ok := next.track(Rule{Pattern: "b.example"}, func() {}); ok {
		t.Error("b.example allowed after its drop was taken")
	}
	next.Take(Narrowed{}) // taking nothing gives nothing back
	if !next.Dropped("a.example") || next.Locked() {
		t.Errorf("after taking nothing: %+v", next.Taken())
	}
	if n := next.Take(Narrowed{Locked: true}); n != 1 || !next.Locked() {
		t.Errorf("taking a lock cut %d, locked %v", n, next.Locked())
	}
	u := Narrowed{Dropped: []string{"x", "a"}}.Union(Narrowed{Locked: true, Dropped: []string{"a", "b"}})
	if !u.Locked || !slices.Equal(u.Dropped, []string{"a", "b", "x"}) {
		t.Errorf("union = %+v", u)
	}
}
