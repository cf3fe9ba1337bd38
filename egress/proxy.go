package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/wink-mcp/wink-mcp/wire"
)

// Limits of one session's proxy.
const (
	// DefaultMaxBytes is --egress-max-bytes's default: 4 GiB a session, room
	// for a machine-learning framework's wheels or a large node_modules,
	// and a stop to a model that downloads in a loop.
	DefaultMaxBytes = 4 << 30
	// headerTimeout bounds reading a request's header, against clients
	// that open a connection and say nothing.
	headerTimeout = 30 * time.Second
	// maxHeaderBytes bounds a request's line and header.
	maxHeaderBytes = 64 << 10
	// dialTimeout bounds connecting to an allowed host.
	dialTimeout = 15 * time.Second
)

// Config is what every session's proxy shares.
type Config struct {
	Policy Policy
	// MaxBytes caps what one session may transfer, both ways, in all.
	MaxBytes int64
	// MaxConns caps the proxy connections one session has open at once
	// (0: DefaultMaxConns); as many more wait up to QueueWait for one to
	// close (0: DefaultQueueWait).
	MaxConns  int
	QueueWait time.Duration
	// Meter, when set, counts the session's bytes against its cap instead
	// of a meter of MaxBytes the proxy makes for itself.
	Meter *Meter
	// Resolve looks a name up; nil uses the system's resolver.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// Ask, when set, asks the user whether the session may reach a host no
	// pattern allows; yes allows that host and port for the session.
	Ask func(ctx context.Context, host string, port int) (bool, error)
	// Narrowing, when set, is what the session took away from its egress
	// (see Narrowing), shared by every proxy it makes; nil: a Narrowing of
	// the proxy's own.
	Narrowing *Narrowing
	// Wording is how refusals name Policy and say what would allow a host.
	Wording Wording
	// OnRefusal, when set, is told of every connection the proxy refuses,
	// as the client is, besides the log record. It must not block.
	OnRefusal func(Refusal)
	// Inject, when set, makes the proxy terminate TLS for the hosts of its
	// credentials and set their headers (see intercept); every other host
	// stays an end-to-end CONNECT.
	Inject *Injection
	// SSHAgent, when set, lends the containers the server's ssh-agent
	// through the filter SSHAgent describes.
	SSHAgent *SSHAgent
	Log      *slog.Logger
}

// Session is one workspace session's proxy. It outlives the session's
// containers; its byte count lives in its meter, which may outlive it.
type Session struct {
	cfg         Config
	id          atomic.Pointer[string]
	own         *ownAddrs
	byteCounter atomic.Pointer[Meter]
	slots       chan struct{} // one for each open connection
	waiting     atomic.Int64  // connections waiting for a slot
	transport   *http.Transport
	asked       askedHosts
	sshSeen     destinations // where connections went, for SSHAgent
}

// NewSession returns the proxy of the session id (which its log records carry).
func NewSession(cfg Config, id string) *Session {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.QueueWait <= 0 {
		cfg.QueueWait = DefaultQueueWait
	}
	s := &Session{cfg: cfg, own: &ownAddrs{}, slots: make(chan struct{}, cfg.MaxConns)}
	s.SetID(id)
	if cfg.Meter == nil {
		cfg.Meter = NewMeter(cfg.MaxBytes, 0)
	}
	s.SetMeter(cfg.Meter)
	if cfg.Narrowing == nil {
		s.cfg.Narrowing = NewNarrowing()
	}
	s.transport = &http.Transport{
		Proxy:                  nil,
		DialContext:            s.dialVetted,
		DisableKeepAlives:      true, // each request its own, checked and logged, connection
		DisableCompression:     true,
		ForceAttemptHTTP2:      false,
		MaxResponseHeaderBytes: maxHeaderBytes,
		ResponseHeaderTimeout:  5 * time.Minute,
	}
	return s
}

// SetID changes the session id the log records carry (a pooled container's
// proxy gets its session's when the session takes it).
func (s *Session) SetID(id string) { s.id.Store(&id) }

func (s *Session) sessionID() string { return *s.id.Load() }

// SetMeter makes m count what the proxy carries from now on (a workspace
// that another session takes over counts against that session's cap).
func (s *Session) SetMeter(m *Meter) { s.byteCounter.Store(m) }

func (s *Session) counter() *Meter { return s.byteCounter.Load() }

// narrowing returns what the session took away from its egress.
func (s *Session) narrowing() *Narrowing { return s.cfg.Narrowing }

// Transferred returns the bytes counted by the proxy's meter.
func (s *Session) Transferred() int64 { return s.counter().Used() }

// Serve answers the proxy connections ln accepts until it fails or closes.
func (s *Session) Serve(ln net.Listener) error {
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: headerTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          log.New(io.Discard, "", 0),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
	}
	defer srv.Close()
	err := srv.Serve(newLimitedListener(ln, s))
	if errors.Is(err, http.ErrServerClosed) || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

type connKey struct{}

// ServeHTTP answers one proxy request: CONNECT, or an http:// URL to forward.
func (s *Session) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		s.connect(w, r)
		return
	}
	s.forward(w, r)
}

// target is a destination that passed the checks: where to dial.
type target struct {
	host  string
	port  int
	addrs []netip.Addr
	rule  Rule
}

// vet checks host and port against the policy, resolves the host once and
// keeps the addresses it may reach; the connection is made to those, so a
// name that resolves differently a moment later changes nothing.
func (s *Session) vet(ctx context.Context, rawHost string, port int) (*target, *refusal) {
	host, literal, err := Normalize(rawHost)
	if err != nil {
		return nil, &refusal{status: http.StatusBadRequest, host: rawHost, port: port, reason: "the host is malformed: " + err.Error()}
	}
	if port < 1 || port > 65535 {
		return nil, &refusal{status: http.StatusBadRequest, host: host, port: port, reason: "the port is out of range"}
	}
	n := s.narrowing()
	if n.Locked() {
		return nil, lockRefusal(host, port)
	}
	rule, ok := s.cfg.Policy.matchSkipping(host, port, func(r Rule) bool { return n.Dropped(r.Pattern) })
	if !ok {
		rule, ok = s.asked.match(host, port)
		if ok && n.Dropped(rule.Pattern) {
			return nil, droppedRefusal(host, port, rule.Pattern)
		}
	}
	if gone, was := s.cfg.Policy.Match(host, port); !ok && was {
		return nil, droppedRefusal(host, port, gone.Pattern)
	}
	if !ok && s.cfg.Ask != nil {
		var why string
		rule, ok, why = s.asked.ask(ctx, s.cfg.Ask, host, port)
		if !ok {
			return nil, &refusal{status: http.StatusForbidden, host: host, port: port, reason: why,
				remedy: fmt.Sprintf("Tell the user why this host is needed; they can allow it with --egress %s.", suggest(host, port))}
		}
	}
	if !ok {
		return nil, &refusal{status: http.StatusForbidden, host: host, port: port,
			reason: fmt.Sprintf("no %s pattern allows it (allowed: %s)", s.cfg.Wording.patterns(), describe(s.cfg.Policy)),
			remedy: s.cfg.Wording.allow(suggest(host, port))}
	}
	var addrs []netip.Addr
	if literal {
		addrs = []netip.Addr{netip.MustParseAddr(host)}
	} else {
		if addrs, err = s.resolve(ctx, host); err != nil {
			return nil, &refusal{status: http.StatusBadGateway, host: host, port: port, reason: "the name does not resolve: " + err.Error()}
		}
	}
	if rule.Explicit() {
		return &target{host: host, port: port, addrs: addrs, rule: rule}, nil
	}
	var public []netip.Addr
	why := ""
	for _, a := range addrs {
		if ok, reason := Public(a, s.own.has); ok {
			public = append(public, a)
		} else if why == "" {
			why = fmt.Sprintf("it resolves to %s, %s", a.Unmap(), reason)
		}
	}
	if len(public) == 0 {
		return nil, &refusal{status: http.StatusForbidden, host: host, port: port, reason: why + " (rule " + rule.Pattern + ")",
			remedy: "Only a pattern naming exactly this host and port reaches such an address. " + s.cfg.Wording.allow(net.JoinHostPort(host, strconv.Itoa(port)))}
	}
	return &target{host: host, port: port, addrs: public, rule: rule}, nil
}

func (s *Session) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	if s.cfg.Resolve != nil {
		return s.cfg.Resolve(ctx, host)
	}
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// dial connects to the first of t's addresses that answers.
func (s *Session) dial(ctx context.Context, t *target) (net.Conn, error) {
	d := net.Dialer{Timeout: dialTimeout, KeepAlive: 15 * time.Second}
	var errs []error
	for _, a := range t.addrs {
		c, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(a, uint16(t.port)).String())
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

type targetKey struct{}

// dialVetted is the forwarding transport's dial: only to the target the
// request was vetted for.
func (s *Session) dialVetted(ctx context.Context, _, _ string) (net.Conn, error) {
	t, ok := ctx.Value(targetKey{}).(*target)
	if !ok {
		return nil, errors.New("egress: a dial without a vetted target")
	}
	return s.dial(ctx, t)
}

// capRefusal is the refusal of a session past its byte cap, or of its
// client past its egress quota, or nil.
func (s *Session) capRefusal(host string, port int) *refusal {
	m := s.counter()
	if b := m.budgetOver(); b != nil && m.Used() < m.Max() {
		reason, remedy := b.Refusal()
		return &refusal{status: http.StatusForbidden, host: host, port: port, reason: reason, remedy: remedy}
	}
	if m.over() {
		return &refusal{status: http.StatusForbidden, host: host, port: port,
			reason: fmt.Sprintf("this session has transferred %d bytes, its cap (--egress-max-bytes) is %d", m.Used(), m.Max()),
			remedy: "Ask the user to restart wink-mcp with a larger --egress-max-bytes."}
	}
	return nil
}

// admit checks the session's cap and then host and port (see vet); it
// answers a refusal itself and returns nil then.
func (s *Session) admit(w http.ResponseWriter, r *http.Request, host string, port int, start time.Time) *target {
	if f := s.capRefusal(host, port); f != nil {
		s.refuse(w, f, start)
		return nil
	}
	t, f := s.vet(r.Context(), host, port)
	if f != nil {
		s.refuse(w, f, start)
		return nil
	}
	return t
}

// refuse logs a refusal, tells Config.OnRefusal and answers it.
func (s *Session) refuse(w http.ResponseWriter, f *refusal, start time.Time) {
	s.logRefused(f, start)
	s.tell(Refusal{Host: f.host, Port: f.port, Status: f.status, Reason: f.reason, Remedy: f.remedy})
	f.write(w)
}

// connect opens a CONNECT tunnel: the bytes go through as they are (TLS
// stays end to end).
func (s *Session) connect(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if r.Host == wire.SSHAgentAuthority {
		s.serveSSHAgent(w, start)
		return
	}
	host, portText, err := net.SplitHostPort(r.Host)
	port, perr := strconv.Atoi(portText)
	if err != nil || perr != nil {
		s.refuse(w, &refusal{status: http.StatusBadRequest, host: r.Host, reason: "CONNECT needs host:port"}, start)
		return
	}
	t := s.admit(w, r, host, port, start)
	if t == nil {
		return
	}
	if s.cfg.SSHAgent != nil {
		s.sshSeen.note(t.host, t.port)
	}
	if c := s.cfg.Inject.credentialFor(t); c != nil || s.cfg.Inject.caches(t) {
		s.intercept(w, r, t, c, start)
		return
	}
	upstream, err := s.dial(r.Context(), t)
	if err != nil {
		s.refuse(w, &refusal{status: http.StatusBadGateway, host: t.host, port: port, reason: "connecting failed: " + err.Error()}, start)
		return
	}
	defer upstream.Close()
	down, buffered, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer down.Close()
	cc, _ := r.Context().Value(connKey{}).(*countingConn)
	before := cc.total()
	forget, ok := s.narrowing().track(t.rule, func() { down.Close(); upstream.Close() })
	if !ok {
		s.refuseHijacked(down, t, start)
		return
	}
	defer forget()
	if _, err := io.WriteString(down, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	if n := buffered.Reader.Buffered(); n > 0 {
		early, _ := buffered.Reader.Peek(n)
		if _, err := upstream.Write(early); err != nil {
			return
		}
	}
	defer cc.carrying()()
	carryConnect(cc, down, upstream)
	s.logAllowed(t, "connect", cc.total()-before, start)
}

// forward sends a plain-HTTP request on. The request's absolute URL names
// the host (a Host header cannot redirect it), and redirects go back to the
// client, which asks again.
func (s *Session) forward(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if !r.URL.IsAbs() || r.URL.Scheme != "http" || r.URL.Host == "" {
		s.refuse(w, &refusal{status: http.StatusBadRequest, host: r.Host, port: 80,
			reason: fmt.Sprintf("a proxy request needs an absolute http:// URL, not %q", r.RequestURI),
			remedy: "HTTPS goes through CONNECT (HTTPS_PROXY)."}, start)
		return
	}
	host, port := r.URL.Hostname(), 80
	if p := r.URL.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil {
			n = -1
		}
		port = n
	}
	t := s.admit(w, r, host, port, start)
	if t == nil {
		return
	}
	cc, _ := r.Context().Value(connKey{}).(*countingConn)
	before := cc.total()
	failed := false
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = pr.In.URL
			pr.Out.Host = ""
			pr.Out.RequestURI = ""
		},
		Transport:     s.transport,
		BufferPool:    largeBuffers,
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			failed = true
			s.refuse(w, &refusal{status: http.StatusBadGateway, host: t.host, port: port, reason: "the request failed: " + err.Error()}, start)
		},
	}
	ctx, cancel := context.WithCancel(context.WithValue(r.Context(), targetKey{}, t))
	defer cancel()
	forget, ok := s.narrowing().track(t.rule, func() {
		cancel()
		if cc != nil {
			cc.Close()
		}
	})
	if !ok {
		s.refuse(w, s.narrowedRefusal(t), start)
		return
	}
	stop := cc.carrying()
	rp.ServeHTTP(w, r.WithContext(ctx))
	stop()
	forget()
	if !failed {
		s.logAllowed(t, "forward", cc.total()-before, start)
	}
}

func (s *Session) logAllowed(t *target, kind string, bytes int64, start time.Time) {
	s.cfg.Log.Info("egress allowed", "event", "egress", "session", s.sessionID(), "allowed", true, "kind", kind,
		"host", t.host, "port", t.port, "rule", t.rule.Pattern, "bytes", bytes,
		"session_bytes", s.Transferred(), "duration_ms", time.Since(start).Milliseconds())
}

func (s *Session) logRefused(f *refusal, start time.Time) {
	s.cfg.Log.Info("egress refused", "event", "egress", "session", s.sessionID(), "allowed", false, "status", f.status,
		"host", f.host, "port", f.port, "reason", f.reason, "bytes", 0, "duration_ms", time.Since(start).Milliseconds())
}

// describe lists a policy's patterns for a refusal.
func describe(p Policy) string {
	if p.Empty() {
		return "none"
	}
	out := ""
	for i, pat := range p.Patterns() {
		if i > 0 {
			out += ", "
		}
		out += pat
	}
	return out
}

// suggest is the pattern that would allow host on port.
func suggest(host string, port int) string {
	if port == 443 || port == 80 {
		return host
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// Reach checks host and port as a connection from the container would be
// checked, and connects to them once: what `wink-mcp doctor` asks of each
// host an allowlist names.
func (s *Session) Reach(ctx context.Context, host string, port int) error {
	t, f := s.vet(ctx, host, port)
	if f != nil {
		return fmt.Errorf("%s", f.reason)
	}
	c, err := s.dial(ctx, t)
	if err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	return c.Close()
}

// Rules returns the policy's rules.
func (p Policy) Rules() []Rule { return append([]Rule(nil), p.rules...) }
