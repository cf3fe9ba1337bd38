package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// startProxy serves a session's proxy on a loopback listener (standing in
// for the tunnel's streams) and returns its URL.
func startProxy(t *testing.T, patterns []string, maxBytes int64, names map[string]string) (*Session, string) {
	t.Helper()
	policy, err := ParsePolicy(patterns)
	if err != nil {
		t.Fatal(err)
	}
	resolve := func(ctx context.Context, host string) ([]netip.Addr, error) {
		if a, ok := names[host]; ok {
			return []netip.Addr{netip.MustParseAddr(a)}, nil
		}
		return nil, fmt.Errorf("no such host %s", host)
	}
	s := NewSession(Config{Policy: policy, MaxBytes: maxBytes, Resolve: resolve}, "test")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() { ln.Close() })
	return s, "http://" + ln.Addr().String()
}

func clientVia(proxy string, tlsFrom *httptest.Server) *http.Client {
	u, _ := url.Parse(proxy)
	tr := &http.Transport{Proxy: http.ProxyURL(u)}
	if tlsFrom != nil {
		tr.TLSClientConfig = tlsFrom.Client().Transport.(*http.Transport).TLSClientConfig
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// An explicit pattern reaches a loopback server through CONNECT with TLS
// verified end to end, and through plain forwarding.
func TestProxyCarriesAllowedConnections(t *testing.T) {
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "over tls") }))
	defer tlsSrv.Close()
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "host=%s", r.Host) }))
	defer plain.Close()
	tlsAddr, plainAddr := tlsSrv.Listener.Addr().String(), plain.Listener.Addr().String()
	s, proxy := startProxy(t, []string{tlsAddr, plainAddr}, 0, nil)
	if code, b := get(t, clientVia(proxy, tlsSrv), tlsSrv.URL); code != 200 || b != "over tls" {
		t.Fatalf("CONNECT: %d %q", code, b)
	}
	if code, b := get(t, clientVia(proxy, nil), plain.URL+"/x"); code != 200 || b != "host="+plainAddr {
		t.Fatalf("forward: %d %q", code, b)
	}
	if s.Transferred() == 0 {
		t.Fatal("nothing counted")
	}
}

// rawRequest sends text to the proxy as it is and returns the answer's
// status line and body.
func rawRequest(t *testing.T, proxy, text string) (string, string) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(proxy, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, text)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%q: %v", text, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.Status, string(b)
}

// Every way to reach what the allowlist does not name is refused with an
// answer that says why and what would allow it.
func TestProxyRefusesEveryEscape(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "reached") }))
	defer upstream.Close()
	port := upstream.Listener.Addr().(*net.TCPAddr).Port
	_, proxy := startProxy(t, []string{"allowed.test", "*.wild.test", fmt.Sprintf("allowed.test:%d", port+1)}, 0,
		map[string]string{"allowed.test": "127.0.0.1", "a.wild.test": "10.0.0.1", "meta.wild.test": "169.254.169.254"})
	cases := map[string]struct{ req, status, want string }{
		"a host no pattern names":             {"CONNECT other.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n", "403", "--egress other.test"},
		"an allowed name on another port":     {"CONNECT allowed.test:22 HTTP/1.1\r\nHost: allowed.test:22\r\n\r\n", "403", "no --egress pattern"},
		"a name that resolves to loopback":    {"CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n", "403", "loopback"},
		"a wildcard name resolving privately": {"CONNECT a.wild.test:443 HTTP/1.1\r\nHost: a.wild.test:443\r\n\r\n", "403", "private"},
		"a metadata address":                  {"CONNECT meta.wild.test:80 HTTP/1.1\r\nHost: meta.wild.test:80\r\n\r\n", "403", "link-local"},
		"an IP literal":                       {fmt.Sprintf("CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: x\r\n\r\n", port), "403", "no --egress pattern"},
		"a decimal IP literal":                {"CONNECT 2130706433:443 HTTP/1.1\r\nHost: x\r\n\r\n", "400", "non-standard"},
		"a hex IP literal":                    {"CONNECT 0x7f000001:443 HTTP/1.1\r\nHost: x\r\n\r\n", "400", "non-standard"},
		"an IPv4-mapped IPv6 literal":         {fmt.Sprintf("CONNECT [::ffff:127.0.0.1]:%d HTTP/1.1\r\nHost: x\r\n\r\n", port), "403", "no --egress pattern"},
		"CONNECT without a port":              {"CONNECT allowed.test HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "400", "host:port"},
		"a plain request to a relative path":  {"GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "400", "absolute http:// URL"},
		"a hostile Host header, plain HTTP":   {fmt.Sprintf("GET http://other.test/ HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n", port), "403", "other.test"},
		"https in a plain request":            {"GET https://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "400", "CONNECT"},
		"conflicting Content-Length and TE":   {"POST http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "40", ""},
		"a request line of 100 KiB":           {"GET http://allowed.test/" + strings.Repeat("a", 100<<10) + " HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "431", ""},
		"a malformed request line":            {"GARBAGE\r\n\r\n", "400", ""},
	}
	for name, c := range cases {
		status, b := rawRequest(t, proxy, c.req)
		if !strings.HasPrefix(status, c.status) || !strings.Contains(b, c.want) || strings.Contains(b, "reached") {
			t.Errorf("%s: %s %q; want %s… naming %q", name, status, b, c.status, c.want)
		}
	}
}

// Past the session's byte cap, connections are refused with the reason.
func TestProxyByteCap(t *testing.T) {
	big := strings.Repeat("x", 64<<10)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, big) }))
	defer upstream.Close()
	_, proxy := startProxy(t, []string{upstream.Listener.Addr().String()}, 100<<10, nil)
	c := clientVia(proxy, nil)
	for range 2 {
		resp, err := c.Get(upstream.URL)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	code, b := get(t, c, upstream.URL)
	if code != 403 || !strings.Contains(b, "--egress-max-bytes") {
		t.Fatalf("past the cap: %d %q", code, b)
	}
}

// sharedBudget is a Budget for tests: a count against a cap.
type sharedBudget struct {
	used, max int64
	mu        sync.Mutex
	refusals  int
}

func (b *sharedBudget) Add(n int64) { b.mu.Lock(); b.used += n; b.mu.Unlock() }
func (b *sharedBudget) Over() bool  { b.mu.Lock(); defer b.mu.Unlock(); return b.used >= b.max }
func (b *sharedBudget) Refusal() (string, string) {
	b.mu.Lock()
	b.refusals++
	b.mu.Unlock()
	return "the client's egress quota (--quota-egress-bytes) is spent", "wait"
}

// Two sessions sharing a budget (a client's egress quota) are both
// refused once their bytes together reach it, with the budget's reason,
// though each is under its own cap.
func TestProxySharedBudget(t *testing.T) {
	big := strings.Repeat("x", 64<<10)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, big) }))
	defer upstream.Close()
	budget := &sharedBudget{max: 100 << 10}
	a, proxyA := startProxy(t, []string{upstream.Listener.Addr().String()}, 1<<30, nil)
	b, proxyB := startProxy(t, []string{upstream.Listener.Addr().String()}, 1<<30, nil)
	a.counter().ShareBudget(budget)
	b.counter().ShareBudget(budget)
	if code, _ := get(t, clientVia(proxyA, nil), upstream.URL); code != 200 {
		t.Fatalf("a under the budget: %d", code)
	}
	if code, _ := get(t, clientVia(proxyB, nil), upstream.URL); code != 200 {
		t.Fatalf("b under the budget: %d", code)
	}
	for _, proxy := range []string{proxyA, proxyB} {
		if code, body := get(t, clientVia(proxy, nil), upstream.URL); code != 403 || !strings.Contains(body, "--quota-egress-bytes") {
			t.Errorf("past the shared budget: %d %q", code, body)
		}
	}
	if budget.refusals != 2 {
		t.Errorf("%d refusals told, want 2", budget.refusals)
	}
}

// A name is resolved once for each connection, and the connection goes to
// the address that was checked: a name that answers differently a moment
// later (DNS rebinding) changes nothing.
func TestProxyDialsTheAddressItChecked(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "checked") }))
	defer upstream.Close()
	port := upstream.Listener.Addr().(*net.TCPAddr).Port
	policy, _ := ParsePolicy([]string{fmt.Sprintf("rebind.test:%d", port)})
	var lookups atomic.Int32
	resolve := func(context.Context, string) ([]netip.Addr, error) {
		if lookups.Add(1)%2 == 1 {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		return []netip.Addr{netip.MustParseAddr("10.9.9.9")}, nil // never reached
	}
	s := NewSession(Config{Policy: policy, Resolve: resolve}, "test")
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	go s.Serve(ln)
	for range 3 {
		before := lookups.Load()
		status, b := rawRequest(t, "http://"+ln.Addr().String(), fmt.Sprintf("GET http://rebind.test:%d/ HTTP/1.1\r\nHost: rebind.test\r\nConnection: close\r\n\r\n", port))
		if lookups.Load()-before != 1 {
			t.Fatalf("%d lookups for one connection; want 1", lookups.Load()-before)
		}
		// Odd lookups answer 127.0.0.1 (the upstream), even ones 10.9.9.9,
		// which would time out: each connection dialled what it looked up.
		if before%2 == 0 && (!strings.HasPrefix(status, "200") || b != "checked") {
			t.Errorf("lookup %d: %s %q", before+1, status, b)
		}
	}
}

// A name that resolves to one of this machine's addresses is refused like
// the address itself.
func TestProxyRefusesANameForThisMachine(t *testing.T) {
	var own string
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsPrivate() && own == "" {
			own = n.IP.String()
		}
	}
	if own == "" {
		t.Skip("no IPv4 address besides loopback and private ones, which are refused as such")
	}
	_, proxy := startProxy(t, []string{"host.test"}, 0, map[string]string{"host.test": own})
	status, b := rawRequest(t, proxy, "CONNECT host.test:443 HTTP/1.1\r\n\r\n")
	if !strings.HasPrefix(status, "403") || !strings.Contains(b, "of this machine") {
		t.Fatalf("%s %q", status, b)
	}
}
