package egress

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/testwait"
)

// Every refusal, of every kind, is told to OnRefusal as its client reads
// it, and a proxy given a Wording speaks of its own patterns and remedy,
// never of --egress; one without speaks of --egress as before.
func TestRefusalsAreToldAndWordedForTheirProxy(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, strings.Repeat("x", 8<<10)) }))
	defer upstream.Close()
	policy, err := ParsePolicy([]string{"private.test", upstream.Listener.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var told []Refusal
	wording := Wording{Patterns: "egress.setup", Allow: func(p string) string { return fmt.Sprintf("Add %q to egress.setup.", p) }}
	s := NewSession(Config{Policy: policy, MaxBytes: 4 << 10, MaxConns: 1, QueueWait: time.Millisecond, Wording: wording,
		Resolve: func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("10.0.0.1")}, nil
		},
		OnRefusal: func(f Refusal) {
			mu.Lock()
			told = append(told, f)
			mu.Unlock()
		}}, "test")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	defer ln.Close()
	proxy := "http://" + ln.Addr().String()

	type seen struct{ what, status, body string }
	var answers []seen
	ask := func(what, req string) {
		status, body := rawRequest(t, proxy, req)
		answers = append(answers, seen{what, status, body})
	}
	ask("no pattern", "CONNECT other.test:8443 HTTP/1.1\r\nHost: other.test:8443\r\n\r\n")
	ask("a private address", "CONNECT private.test:443 HTTP/1.1\r\n\r\n")
	ask("malformed", "CONNECT 0x7f000001:443 HTTP/1.1\r\n\r\n")
	if code, _ := get(t, clientVia(proxy, nil), upstream.URL); code != 200 {
		t.Fatalf("the allowed download: %d", code)
	}
	testwait.For(t, "the download's connection to close", func() bool { return len(s.slots) == 0 })
	ask("past the byte cap", "GET "+upstream.URL+" HTTP/1.1\r\nHost: x\r\n\r\n")
	testwait.For(t, "the refused request's connection to close", func() bool { return len(s.slots) == 0 })
	held, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	testwait.For(t, "a connection to hold the only slot", func() bool { return len(s.slots) == 1 })
	ask("past the connection limit", "CONNECT other.test:443 HTTP/1.1\r\n\r\n")

	mu.Lock()
	defer mu.Unlock()
	if len(told) != len(answers) {
		t.Fatalf("OnRefusal was told %d refusals for %d: %+v", len(told), len(answers), told)
	}
	for i, a := range answers {
		f := told[i]
		if !strings.HasPrefix(a.status, fmt.Sprint(f.Status)) || !strings.Contains(a.body, f.Reason) || !strings.Contains(a.body, f.Remedy) {
			t.Errorf("%s: told %+v; the client read %s %q", a.what, f, a.status, a.body)
		}
	}
	for i, want := range []string{`no egress.setup pattern allows it (allowed: private.test, ` + upstream.Listener.Addr().String() + `). Add "other.test:8443" to egress.setup.`,
		`reaches such an address. Add "private.test:443" to egress.setup.`} {
		if !strings.Contains(answers[i].body, want) || strings.Contains(answers[i].body, "--egress") {
			t.Errorf("%s: %q; want %q, and no --egress", answers[i].what, answers[i].body, want)
		}
	}
	if told[0].Host != "other.test" || told[0].Port != 8443 || told[4].Host != "" || told[4].Status != http.StatusServiceUnavailable {
		t.Errorf("hosts and ports told: %+v", told)
	}

	_, plain := startProxy(t, nil, 0, nil)
	if _, body := rawRequest(t, plain, "CONNECT other.test:443 HTTP/1.1\r\n\r\n"); !strings.Contains(body, "no --egress pattern allows it (allowed: none). Ask the user to start wink-mcp with --egress other.test if this host is needed.") {
		t.Errorf("the server's proxy: %q", body)
	}
}
