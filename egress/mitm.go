package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// handshakeTimeout bounds the TLS handshake with the client of an
// intercepted connection.
const handshakeTimeout = 30 * time.Second

// Injection is what a session's proxy needs to inject credentials: the
// credentials, the CA that signs the hosts' certificates, and the roots
// it verifies the upstream hosts with.
type Injection struct {
	Credentials CredentialSet
	Authority   *Authority
	// Roots verify the upstream hosts (nil: the system's).
	Roots *x509.CertPool
	// Trust names the roots Roots holds beyond those every session of the
	// server trusts ("" for none; a digest of a profile's ca_bundle). The
	// artefact cache keeps what it fetched under each Trust apart: an
	// answer only verified with a CA one profile trusts (a TLS-inspecting
	// proxy's, say) never reaches a session that does not trust it.
	Trust string
	// Artefacts, when set, is the artefact cache and the hosts it keeps
	// artefacts of, which the proxy intercepts too (see serveCached).
	Artefacts *ArtefactCache
}

// credentialFor returns the credential for t, or nil (also for no injection).
func (in *Injection) credentialFor(t *target) *Credential {
	if in == nil || in.Authority == nil {
		return nil
	}
	return in.Credentials.For(t.host, t.port)
}

// UpstreamRoots returns the system's roots with the certificates of the
// PEM bundle extra added (the --ca-bundle a TLS-inspecting network needs).
func UpstreamRoots(extra []byte) (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if len(extra) > 0 && !pool.AppendCertsFromPEM(extra) {
		return nil, errors.New("the CA bundle holds no PEM certificate")
	}
	return pool, nil
}

// intercept serves a CONNECT to a host credential c is for, or whose
// artefacts the proxy caches (c nil): it terminates TLS with a certificate
// for exactly that host, and sends each request on to it, verified, with
// c's header set, or answers it from the cache. A request for any other
// host (Host header, absolute URI, SNI) is refused and never sent.
func (s *Session) intercept(w http.ResponseWriter, r *http.Request, t *target, c *Credential, start time.Time) {
	down, buffered, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer down.Close()
	cc, _ := r.Context().Value(connKey{}).(*countingConn)
	before := cc.total()
	forget, ok := s.narrowing().track(t.rule, func() { down.Close() }) // a drop or a lock cuts it too
	if !ok {
		s.refuseHijacked(down, t, start)
		return
	}
	defer forget()
	if _, err := io.WriteString(down, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	defer cc.carrying()()
	in := &prefixedConn{Conn: down, r: buffered.Reader}
	sniWrong := ""
	tc := tls.Server(in, &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"}, // one host per connection: no HTTP/2 coalescing
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			if hello.ServerName != "" {
				if sni, _, err := Normalize(hello.ServerName); err != nil || sni != t.host {
					sniWrong = hello.ServerName
					return nil, fmt.Errorf("the TLS server name %q is not %s", hello.ServerName, t.host)
				}
			}
			return s.cfg.Inject.Authority.leaf(t.host)
		},
	})
	_ = down.SetDeadline(time.Now().Add(handshakeTimeout))
	if err := tc.Handshake(); err != nil {
		reason := "the TLS handshake failed: " + err.Error()
		if sniWrong != "" {
			reason = fmt.Sprintf("the TLS server name %q is not the host of the CONNECT", sniWrong)
		}
		s.logRefused(&refusal{status: http.StatusMisdirectedRequest, host: t.host, port: t.port, reason: reason}, start)
		return
	}
	_ = down.SetDeadline(time.Time{})
	up := s.upstream(t)
	defer up.CloseIdleConnections()
	br := bufio.NewReader(tc)
	requests := 0
	for {
		_ = tc.SetReadDeadline(time.Now().Add(idleKeepAlive))
		req, err := http.ReadRequest(br)
		if err != nil {
			break
		}
		_ = tc.SetReadDeadline(time.Time{})
		requests++
		if !s.relay(tc, req, t, c, up, start) {
			break
		}
	}
	kind, name := "cache", ""
	if c != nil {
		kind, name = "credential", c.Name
	}
	s.cfg.Log.Info("egress allowed", "event", "egress", "session", s.sessionID(), "allowed", true, "kind", kind,
		"credential", name, "requests", requests, "host", t.host, "port", t.port, "rule", t.rule.Pattern,
		"bytes", cc.total()-before, "session_bytes", s.Transferred(), "duration_ms", time.Since(start).Milliseconds())
}

// idleKeepAlive is how long an intercepted connection waits for its next request.
const idleKeepAlive = 90 * time.Second

// relay sends one request of an intercepted connection on and writes the
// answer back; false ends the connection.
func (s *Session) relay(down io.Writer, req *http.Request, t *target, c *Credential, up *http.Transport, start time.Time) bool {
	if why := misdirected(req, t); why != "" {
		f := &refusal{status: http.StatusMisdirectedRequest, host: t.host, port: t.port, reason: why,
			remedy: "Open a connection of its own (CONNECT) for each host."}
		s.logRefused(f, start)
		s.tell(Refusal{Host: f.host, Port: f.port, Status: f.status, Reason: f.reason, Remedy: f.remedy})
		_, _ = io.WriteString(down, "HTTP/1.1 421 Misdirected Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"+
			"wink-mcp egress proxy: "+why+". "+f.remedy+"\n")
		return false
	}
	if strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
		// git push and curl wait for this before sending a large body; the
		// upstream's own answer comes after the body.
		if _, err := io.WriteString(down, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			return false
		}
		req.Header.Del("Expect")
	}
	out := req.Clone(req.Context())
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host = "https", net.JoinHostPort(t.host, strconv.Itoa(t.port))
	out.Host = out.URL.Host
	if t.port == 443 {
		out.Host = t.host
	}
	for _, h := range []string{"Proxy-Authorization", "Proxy-Connection"} {
		out.Header.Del(h)
	}
	c.apply(out.Header)
	if key, why := s.cfg.Inject.cacheKey(out, t, c); key != "" {
		return s.relayCached(down, out, key, t, up, start)
	} else if why != "" {
		s.cfg.Inject.Artefacts.Cache.stats.Bypasses.Add(1)
	}
	resp, err := up.RoundTrip(out)
	if err != nil {
		why := "the request failed: " + scrub(err.Error(), c)
		s.logRefused(&refusal{status: http.StatusBadGateway, host: t.host, port: t.port, reason: why}, start)
		_, _ = io.WriteString(down, "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"+
			"wink-mcp egress proxy: "+why+"\n")
		return false
	}
	defer resp.Body.Close()
	// The answer goes back as it came: a redirect included, which the
	// client follows (or not) with a request of its own, checked again.
	if err := resp.Write(down); err != nil {
		return false
	}
	return !req.Close && !resp.Close
}

// misdirected says why req, read from a connection intercepted for t,
// names another host, or "".
func misdirected(req *http.Request, t *target) string {
	if req.Method == http.MethodConnect {
		return "a CONNECT inside a CONNECT"
	}
	if req.URL.IsAbs() || req.URL.Host != "" {
		if req.URL.Scheme != "https" || !sameAuthority(req.URL.Host, t, req.URL.Scheme) {
			return fmt.Sprintf("the request is for %s, not %s", req.URL.Host, t.host)
		}
	}
	if !sameAuthority(req.Host, t, "https") {
		return fmt.Sprintf("the request's Host %q is not %s", req.Host, t.host)
	}
	return ""
}

// sameAuthority says whether authority (host or host:port) names t.
func sameAuthority(authority string, t *target, scheme string) bool {
	host, port := authority, ""
	if h, p, err := net.SplitHostPort(authority); err == nil {
		host, port = h, p
	}
	norm, _, err := Normalize(host)
	if err != nil || norm != t.host {
		return false
	}
	if port == "" {
		return scheme == "https" && t.port == 443
	}
	return port == strconv.Itoa(t.port)
}

// upstream returns a transport that reaches only t, over TLS verified
// against the injection's roots for t's name.
func (s *Session) upstream(t *target) *http.Transport {
	return &http.Transport{
		Proxy: nil,
		DialTLSContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			raw, err := s.dial(ctx, t)
			if err != nil {
				return nil, err
			}
			tc := tls.Client(raw, &tls.Config{ServerName: t.host, RootCAs: s.cfg.Inject.Roots,
				NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12})
			if err := tc.HandshakeContext(ctx); err != nil {
				raw.Close()
				return nil, err
			}
			return tc, nil
		},
		DisableCompression:     true,
		ForceAttemptHTTP2:      false,
		MaxIdleConnsPerHost:    4,
		MaxResponseHeaderBytes: maxHeaderBytes,
		ResponseHeaderTimeout:  5 * time.Minute,
	}
}

// scrub takes the credential's value out of text, for an error or a log.
func scrub(text string, c *Credential) string {
	if c == nil {
		return text
	}
	return strings.ReplaceAll(text, c.value, "[credential "+c.Name+"]")
}

// prefixedConn reads what a buffered reader already holds before the conn.
type prefixedConn struct {
	net.Conn
	r *bufio.Reader
}

func (p *prefixedConn) Read(b []byte) (int, error) { return p.r.Read(b) }
