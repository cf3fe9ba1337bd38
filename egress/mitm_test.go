package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

const testSecret = "s3cret-VALUE-never-shown"

// recorder is an upstream that records the Authorization header of every
// request it receives.
type recorder struct {
	mu   sync.Mutex
	seen []string
	srv  *httptest.Server
}

func newRecorder(t *testing.T, handler func(w http.ResponseWriter, r *http.Request)) *recorder {
	rec := &recorder{}
	rec.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.seen = append(rec.seen, r.Host+" "+r.Header.Get("Authorization"))
		rec.mu.Unlock()
		if handler != nil {
			handler(w, r)
			return
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

func (r *recorder) port() string {
	_, p, _ := net.SplitHostPort(r.srv.Listener.Addr().String())
	return p
}

func (r *recorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

// mitmRig is a proxy with one credential, for example.com on the port of
// a local TLS server (whose certificate is for example.com), and a second
// allowed host, 127.0.0.1 on another server's port, without one.
type mitmRig struct {
	cred, other *recorder
	ca          *Authority
	proxy       string
	logs        *bytes.Buffer
	mu          sync.Mutex // guards logs
	credHost    string     // example.com:port
	session     *Session
}

func newMitmRig(t *testing.T, credHandler func(w http.ResponseWriter, r *http.Request)) *mitmRig {
	return newMitmRigTrusting(t, credHandler, true)
}

func newMitmRigTrusting(t *testing.T, credHandler func(w http.ResponseWriter, r *http.Request), trustUpstream bool) *mitmRig {
	t.Helper()
	rig := &mitmRig{cred: newRecorder(t, credHandler), other: newRecorder(t, nil), logs: &bytes.Buffer{}}
	rig.credHost = "example.com:" + rig.cred.port()
	ca, err := LoadAuthority(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rig.ca = ca
	creds, err := ParseCredentials("creds.yaml", []byte(fmt.Sprintf("credentials:\n  api:\n    hosts: [%q]\n    bearer: {env: TOKEN}\n    placeholder: API_TOKEN\n", rig.credHost)),
		func(string) (string, bool) { return testSecret, true })
	if err != nil {
		t.Fatal(err)
	}
	policy, err := ParsePolicy([]string{rig.credHost, "127.0.0.1:" + rig.other.port()})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if trustUpstream {
		roots.AddCert(rig.cred.srv.Certificate())
	}
	s := NewSession(Config{Policy: policy,
		Resolve: func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		},
		Inject: &Injection{Credentials: CredentialSet{creds.Get("api")}, Authority: ca, Roots: roots},
		Log:    slog.New(slog.NewJSONHandler(lockedWriter{&rig.mu, rig.logs}, nil))}, "test")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() { ln.Close() })
	rig.proxy, rig.session = "http://"+ln.Addr().String(), s
	return rig
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// client trusts wink-mcp's CA and the other server's certificate, as a
// session's container would (its bundle holds the CA and public roots).
func (rig *mitmRig) client(protos ...string) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(rig.ca.CertPEM())
	pool.AddCert(rig.other.srv.Certificate())
	u, _ := url.Parse(rig.proxy)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(u),
		TLSClientConfig: &tls.Config{RootCAs: pool, NextProtos: protos}}}
}

// tunnel opens a CONNECT to hostPort through the proxy and a TLS session
// over it named sni.
func (rig *mitmRig) tunnel(t *testing.T, hostPort, sni string) (*tls.Conn, error) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(rig.proxy, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", hostPort, hostPort)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT %s: %v %v", hostPort, resp, err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(rig.ca.CertPEM())
	tc := tls.Client(c, &tls.Config{ServerName: sni, RootCAs: pool, InsecureSkipVerify: sni != "example.com"})
	_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
	return tc, tc.Handshake()
}

// waitForLog waits until the log holds text (a connection's record comes
// when it closes).
func (rig *mitmRig) waitForLog(t *testing.T, text string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		rig.mu.Lock()
		found := strings.Contains(rig.logs.String(), text)
		rig.mu.Unlock()
		if found {
			return
		}
	}
	t.Fatalf("no log record holds %s:\n%s", text, rig.logs)
}

func (rig *mitmRig) assertNoSecretLogged(t *testing.T) {
	t.Helper()
	rig.mu.Lock()
	defer rig.mu.Unlock()
	if strings.Contains(rig.logs.String(), testSecret) {
		t.Fatalf("the credential is in the log:\n%s", rig.logs.String())
	}
}

// The credential's host gets the header, in place of the placeholder the
// client sent; the client sees wink-mcp's certificate for that host only.
func TestInjectReplacesThePlaceholder(t *testing.T) {
	rig := newMitmRig(t, nil)
	req, _ := http.NewRequest("GET", "https://"+rig.credHost+"/x", nil)
	req.Header.Set("Authorization", "Bearer "+Placeholder)
	c := rig.client()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	c.CloseIdleConnections()
	if resp.StatusCode != 200 || string(body) != "ok" {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	if got := rig.cred.requests(); len(got) != 1 || got[0] != rig.credHost+" Bearer "+testSecret {
		t.Fatalf("upstream saw %q", got)
	}
	if issuer := resp.TLS.PeerCertificates[0].Issuer.CommonName; !strings.HasPrefix(issuer, "wink-mcp egress CA") {
		t.Fatalf("the client saw a certificate from %q", issuer)
	}
	rig.waitForLog(t, `"credential":"api"`)
	rig.assertNoSecretLogged(t)
}

// Every way of sending a request for another host down the credential's
// connection is refused with a 421 and reaches no server.
func TestInjectRefusesOtherHostsInTheTunnel(t *testing.T) {
	rig := newMitmRig(t, nil)
	otherHostPort := "127.0.0.1:" + rig.other.port()
	cases := []struct{ name, request string }{
		{"Host header of another host", "GET / HTTP/1.1\r\nHost: " + otherHostPort + "\r\n\r\n"},
		{"Host header of the name on another port", "GET / HTTP/1.1\r\nHost: example.com:1\r\n\r\n"},
		{"Host header without the port", "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"},
		{"absolute URI of another host", "GET https://" + otherHostPort + "/ HTTP/1.1\r\nHost: " + rig.credHost + "\r\n\r\n"},
		{"absolute http URI", "GET http://" + rig.credHost + "/ HTTP/1.1\r\nHost: " + rig.credHost + "\r\n\r\n"},
		{"CONNECT inside", "CONNECT " + otherHostPort + " HTTP/1.1\r\nHost: " + otherHostPort + "\r\n\r\n"},
		{"a second request for another host after a good one", "GET / HTTP/1.1\r\nHost: " + rig.credHost + "\r\n\r\nGET / HTTP/1.1\r\nHost: " + otherHostPort + "\r\n\r\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(rig.cred.requests())
			conn, err := rig.tunnel(t, rig.credHost, "example.com")
			if err != nil {
				t.Fatal(err)
			}
			io.WriteString(conn, tc.request)
			br := bufio.NewReader(conn)
			good := strings.Count(tc.request, "Host: "+rig.credHost+"\r\n\r\nGET")
			for range good {
				resp, err := http.ReadResponse(br, nil)
				if err != nil || resp.StatusCode != 200 {
					t.Fatalf("the good request: %v %v", resp, err)
				}
				io.Copy(io.Discard, resp.Body)
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusMisdirectedRequest {
				t.Fatalf("status %d, want 421", resp.StatusCode)
			}
			if n := len(rig.cred.requests()) - before; n != good {
				t.Fatalf("the credential's server got %d requests, want %d", n, good)
			}
			if got := rig.other.requests(); len(got) != 0 {
				t.Fatalf("the other server got %q", got)
			}
		})
	}
	rig.assertNoSecretLogged(t)
}

// A TLS server name other than the CONNECT's host gets no certificate.
func TestInjectRefusesAnotherServerName(t *testing.T) {
	rig := newMitmRig(t, nil)
	if _, err := rig.tunnel(t, rig.credHost, "evil.example.org"); err == nil {
		t.Fatal("the handshake for another name succeeded")
	}
	if got := rig.cred.requests(); len(got) != 0 {
		t.Fatalf("upstream got %q", got)
	}
	rig.waitForLog(t, "evil.example.org")
}

// A redirect goes back to the client as it came; the client's request to
// the other host carries only what the client sent.
func TestInjectDoesNotFollowRedirects(t *testing.T) {
	var otherURL string
	rig := newMitmRig(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, otherURL, http.StatusFound)
	})
	otherURL = "https://127.0.0.1:" + rig.other.port() + "/landed"
	c := rig.client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Get("https://" + rig.credHost + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != otherURL {
		t.Fatalf("%d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if got := rig.other.requests(); len(got) != 0 {
		t.Fatalf("the proxy followed the redirect: %q", got)
	}
	req, _ := http.NewRequest("GET", "https://"+rig.credHost+"/", nil)
	req.Header.Set("Authorization", "Bearer "+Placeholder)
	resp, err = rig.client().Do(req) // follows, as curl -L or git would
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got := rig.other.requests()
	if len(got) != 1 || strings.Contains(got[0], testSecret) {
		t.Fatalf("the other host saw %q", got)
	}
	rig.assertNoSecretLogged(t)
}

// The placeholder sent to a host without the credential stays the
// placeholder.
func TestPlaceholderElsewhereGetsNothing(t *testing.T) {
	rig := newMitmRig(t, nil)
	req, _ := http.NewRequest("GET", "https://127.0.0.1:"+rig.other.port()+"/", nil)
	req.Header.Set("Authorization", "Bearer "+Placeholder)
	resp, err := rig.client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := rig.other.requests(); len(got) != 1 || !strings.HasSuffix(got[0], " Bearer "+Placeholder) {
		t.Fatalf("the other host saw %q", got)
	}
	if resp.TLS.PeerCertificates[0].Issuer.CommonName == rig.ca.cert.Subject.CommonName {
		t.Fatal("a host without a credential was intercepted")
	}
}

// The intercepted side speaks HTTP/1.1 only, so no HTTP/2 connection is
// coalesced across hosts; a client offering h2 gets http/1.1.
func TestInjectSpeaksHTTP1Only(t *testing.T) {
	rig := newMitmRig(t, nil)
	c := rig.client("h2", "http/1.1")
	c.Transport.(*http.Transport).ForceAttemptHTTP2 = true
	resp, err := c.Get("https://" + rig.credHost + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Proto != "HTTP/1.1" || resp.TLS.NegotiatedProtocol != "http/1.1" {
		t.Fatalf("proto %s, ALPN %q", resp.Proto, resp.TLS.NegotiatedProtocol)
	}
}

// An upstream whose certificate the proxy does not trust gets no request,
// and the client a 502 that does not carry the credential.
func TestInjectVerifiesTheUpstream(t *testing.T) {
	rig := newMitmRigTrusting(t, nil, false)
	resp, err := rig.client().Get("https://" + rig.credHost + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), "certificate") || strings.Contains(string(body), testSecret) {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	if got := rig.cred.requests(); len(got) != 0 {
		t.Fatalf("the untrusted upstream got %q", got)
	}
	rig.assertNoSecretLogged(t)
}

// A client that waits for 100 Continue before its body (git push, curl
// with a large upload) gets it at once, and the body reaches the host.
func TestInjectAnswersExpectContinue(t *testing.T) {
	rig := newMitmRig(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "got %d bytes", len(b))
	})
	conn, err := rig.tunnel(t, rig.credHost, "example.com")
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(conn, "POST /push HTTP/1.1\r\nHost: "+rig.credHost+"\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
	br := bufio.NewReader(conn)
	line, err := br.ReadString('\n')
	if err != nil || !strings.Contains(line, "100 Continue") {
		t.Fatalf("before the body: %q %v", line, err)
	}
	br.ReadString('\n')
	io.WriteString(conn, "hello")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "got 5 bytes" {
		t.Fatalf("%d %q", resp.StatusCode, b)
	}
	if got := rig.cred.requests(); len(got) != 1 || !strings.HasSuffix(got[0], testSecret) {
		t.Fatalf("upstream saw %q", got)
	}
}
