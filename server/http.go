package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/hostguard"
	"github.com/wink-mcp/wink-mcp/server/mcpgoadapt"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// Transports.
const (
	TransportStdio = "stdio"
	TransportSSE   = "sse"
	TransportHTTP  = "http"
)

// Paths of the HTTP transports.
const (
	streamablePath = "/mcp"
	ssePath        = "/sse"
	messagePath    = "/message"
)

// Defaults of HTTPConfig.
const (
	DefaultAddr         = "127.0.0.1:8080"
	DefaultMaxSessions  = 64
	DefaultMaxBodyBytes = 4 << 20
	DefaultDrainTimeout = 30 * time.Second
	DefaultBodyTimeout  = 30 * time.Second
)

// HTTPConfig configures the SSE and streamable HTTP transports.
type HTTPConfig struct {
	// Addr is the TCP address to listen on.
	Addr string
	// AuthTokens are the bearer tokens accepted; with none, no token is
	// asked for, which is allowed on loopback addresses only.
	AuthTokens []string
	// AllowedHosts are Host names accepted besides the loopback ones.
	AllowedHosts []string
	// AllowedOrigins are Origins (scheme://host[:port]) accepted besides loopback ones.
	AllowedOrigins []string
	// MaxSessions caps the sessions served at once.
	MaxSessions int
	// MaxBodyBytes caps a request body; the stdio transport caps a line at
	// the same size.
	MaxBodyBytes int64
	// DrainTimeout bounds how long shutdown waits for tool calls in flight.
	DrainTimeout time.Duration
	// BodyTimeout bounds how long a request body may take to arrive; 0 means DefaultBodyTimeout.
	BodyTimeout time.Duration
	// OAuth, when its issuer is set, authenticates clients by OAuth access
	// token instead of AuthTokens.
	OAuth OAuthConfig
}

// DefaultHTTPConfig returns the defaults: loopback only, no token.
func DefaultHTTPConfig() HTTPConfig {
	return HTTPConfig{Addr: DefaultAddr, MaxSessions: DefaultMaxSessions, MaxBodyBytes: DefaultMaxBodyBytes, DrainTimeout: DefaultDrainTimeout, BodyTimeout: DefaultBodyTimeout}
}

// Validate refuses settings that would expose the server unsafely.
func (c HTTPConfig) Validate() error {
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return fmt.Errorf("address %q: %w", c.Addr, err)
	}
	if err := c.OAuth.validate(c.Addr, len(c.AuthTokens)); err != nil {
		return err
	}
	if !hostguard.IsLoopback(host) && len(c.AuthTokens) == 0 && c.OAuth.Issuer == "" {
		return fmt.Errorf("refusing to listen on %s without a bearer token: anyone who can reach it could run commands. "+
			"Set --auth-token-file or WINK_AUTH_TOKEN, or --oauth-issuer, or listen on a loopback address such as %s", c.Addr, DefaultAddr)
	}
	for _, t := range c.AuthTokens {
		if len(t) < 16 {
			return errors.New("an auth token is shorter than 16 characters; use a long random one, e.g. `openssl rand -hex 32`")
		}
	}
	if c.MaxSessions < 1 || c.MaxBodyBytes < 64<<10 || c.DrainTimeout < 0 {
		return fmt.Errorf("max sessions %d must be at least 1, max body %d at least 64 KiB", c.MaxSessions, c.MaxBodyBytes)
	}
	if c.BodyTimeout < 0 {
		return fmt.Errorf("body timeout %s must not be negative", c.BodyTimeout)
	}
	return nil
}

// ServeHTTP serves one HTTP transport ("http": streamable HTTP at /mcp;
// "sse": SSE at /sse with messages at /message), and a health check at
// /healthz, until ctx is done. Then it
// stops accepting, lets tool calls in flight finish for up to the drain
// timeout, and closes every connection, which cancels what is still running.
func (s *Server) ServeHTTP(ctx context.Context, transport string) error {
	cfg := s.cfg.HTTP
	tr, err := s.transportHandler(ctx, transport)
	if err != nil {
		return err
	}
	defer tr.close()
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Addr, err)
	}
	path := streamablePath
	if transport == TransportSSE {
		path = ssePath
	}
	s.sessions.quotas = s.cfg.Quotas
	guard := newGuard(cfg, s.sessions, s.cfg.Workspace.Profiles, s.log, mcpgoadapt.NewExactIDs(s.log, tr.handler, interceptor(s)))
	guard.reserve, guard.opened, guard.refused = s.reserveSlot, tr.opened, s.tel.recordRefusal
	guard.oauth = resourceServerFrom(cfg, ln.Addr().String(), path)
	s.mgr.SetParkLimit(s.parkLimit)
	srv := &http.Server{
		Handler:           withHealth(withMetadata(guard.oauth, bodyDeadline(cfg.BodyTimeout, guard))),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.log.Info("serving MCP over HTTP", "transport", transport, "addr", ln.Addr().String(), "url", "http://"+ln.Addr().String()+path,
		"auth", len(cfg.AuthTokens) > 0 || guard.oauth != nil, "oauth_issuer", cfg.OAuth.Issuer, "max_sessions", cfg.MaxSessions)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}

	start := time.Now()
	drain, cancel := context.WithTimeout(context.Background(), cfg.DrainTimeout)
	defer cancel()
	go func() { _ = srv.Shutdown(drain) }() // stop accepting at once
	s.calls.wait(drain)
	s.log.Info("http transport drained", "duration_ms", time.Since(start).Milliseconds(), "calls_left", s.calls.count())
	return srv.Close() // cut streams and whatever still runs
}

// httpTransport is an mcp-go HTTP transport as ServeHTTP serves it.
type httpTransport struct {
	handler http.Handler
	close   func()
	// opened ends a session whose opening request is over but which did
	// not come to be (see guard.opened).
	opened func(id string)
}

// transportHandler builds the mcp-go transport for transport; streamable
// HTTP sessions are expired when idle until ctx is done.
func (s *Server) transportHandler(ctx context.Context, transport string) (httpTransport, error) {
	quiet := mcpgoadapt.QuietLogger(s.log.Handler())
	switch transport {
	case TransportHTTP:
		h := mcpserver.NewStreamableHTTPServer(s.mcp,
			mcpserver.WithEndpointPath(streamablePath),
			mcpserver.WithSessionIdManagerResolver(sessionIDResolver{store: s.sessions, reserve: s.reserveSlot, register: s.mgr.Register}),
			// Not mcp-go's idle TTL, which counts from a request's start and so
			// ends a session in the middle of a long call: see expireIdle.
			// Every revision mcp-go serves: 2026-07-28 requests, which have no
			// session, reach a workspace through a handle (workspace_open).
			mcpserver.WithStreamableHTTPLogger(quiet),
			// Resumable streams; also makes mcp-go deliver every notification
			// of a request exactly once (see mcpgoadapt.NewEventLog).
			mcpserver.WithEventStore(mcpgoadapt.NewEventLog()),
			mcpserver.WithHTTPContextFunc(func(ctx context.Context, _ *http.Request) context.Context { return withStopper(s.requestContext(ctx)) }),
		)
		mux := http.NewServeMux()
		mux.Handle(streamablePath, s.cancels.wrap(h))
		go s.expireIdle(ctx, h)
		// A session whose initialize failed still got an id: it is ended
		// at once rather than holding a slot until it expires unconfirmed.
		opened := func(id string) {
			if s.sessions.uninitialized(id) {
				s.log.Info("http session ended: its initialize failed", "session", s.mgr.SessionHash(id))
				endStreamable(ctx, h, id)
			}
		}
		return httpTransport{handler: mux, close: func() { _ = h.Shutdown(context.Background()) }, opened: opened}, nil
	case TransportSSE:
		h := mcpserver.NewSSEServer(s.mcp,
			mcpserver.WithSSEEndpoint(ssePath),
			mcpserver.WithMessageEndpoint(messagePath),
			mcpserver.WithSessionIDGenerator(func(ctx context.Context, r *http.Request) (string, error) {
				return sessionIDs{store: s.sessions, slot: slotFrom(ctx), reserve: s.reserveSlot, principal: principalFrom(ctx),
					workspace: r.URL.Query().Get(workspaceParam), profile: r.URL.Query().Get(profileParam), register: s.mgr.Register}.Generate(), nil
			}),
			mcpserver.WithSSEContextFunc(func(ctx context.Context, _ *http.Request) context.Context {
				return s.requestContext(context.WithValue(ctx, legacyOnlyKey{}, true))
			}),
			mcpserver.WithKeepAlive(true),
			mcpserver.WithKeepAliveInterval(30*time.Second),
		)
		mux := http.NewServeMux()
		mux.Handle(ssePath, h.SSEHandler())
		mux.Handle(messagePath, h.MessageHandler())
		// A session is its stream: one still recorded when its stream is
		// over was never registered (mcp-go refused it), and ends now.
		opened := func(id string) {
			if s.sessions.has(id) {
				s.sessions.remove(id)
				end, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
				defer cancel()
				s.mgr.EndSession(end, id)
			}
		}
		return httpTransport{handler: mux, close: func() {}, opened: opened}, nil
	}
	return httpTransport{}, fmt.Errorf("unknown transport %q: want stdio, sse or http", transport)
}

// workspaceParam is the query parameter of the URL a client connects to
// that names the kept workspace its session opens: /mcp?workspace=NAME,
// /sse?workspace=NAME.
const workspaceParam = "workspace"

// profileParam is the query parameter that names the profile a session
// starts with, for a client that knows it before the session starts:
// /mcp?profile=NAME, /sse?profile=NAME (the model uses workspace_profile).
const profileParam = "profile"

// sessionIDResolver gives each streamable HTTP request a session id manager
// bound to the request's principal and the workspace it names.
type sessionIDResolver struct {
	store    *sessionStore
	reserve  func(*slot) (int, bool)
	register func(id string, opts workspace.SessionOptions)
}

func (r sessionIDResolver) ResolveSessionIdManager(req *http.Request) mcpserver.SessionIdManager {
	if req == nil {
		return sessionIDs{store: r.store} // the transport's own sweeper
	}
	return sessionIDs{store: r.store, slot: slotFrom(req.Context()), reserve: r.reserve, principal: principalFrom(req.Context()),
		workspace: req.URL.Query().Get(workspaceParam), profile: req.URL.Query().Get(profileParam), register: r.register}
}

// expireIdle ends the streamable HTTP sessions that have had no request in
// flight and none for the idle timeout, as a client's DELETE would, until
// ctx is done. A session serving a request, a long tool call or an open
// event stream, is never idle.
func (s *Server) expireIdle(ctx context.Context, transport http.Handler) {
	idle := s.cfg.Workspace.IdleTimeout
	onIdleTicks(ctx, idle, func() {
		for _, id := range s.sessions.idle(idle) {
			s.log.Info("http session expired", "session", s.mgr.SessionHash(id), "idle_timeout", idle.String())
			endStreamable(ctx, transport, id)
		}
	})
}

// onIdleTicks calls f every quarter of idle, at least every 10 s and at
// most every 100 ms, until ctx is done; with idle not positive (no idle
// timeout) it returns at once.
func onIdleTicks(ctx context.Context, idle time.Duration, f func()) {
	if idle <= 0 {
		return
	}
	tick := time.NewTicker(min(max(idle/4, 100*time.Millisecond), 10*time.Second))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		f()
	}
}

// endStreamable ends a streamable HTTP session as its client's DELETE
// would: mcp-go forgets it, and the server's hook ends its workspace.
func endStreamable(ctx context.Context, transport http.Handler, id string) {
	end, err := http.NewRequestWithContext(ctx, http.MethodDelete, "http://localhost"+streamablePath, nil)
	if err != nil {
		return
	}
	end.RemoteAddr = "127.0.0.1:0"
	end.Header.Set(mcpserver.HeaderKeySessionID, id)
	transport.ServeHTTP(discardResponse{header: http.Header{}}, end)
}

// discardResponse is a ResponseWriter that drops what it is given.
type discardResponse struct{ header http.Header }

func (d discardResponse) Header() http.Header       { return d.header }
func (discardResponse) Write(p []byte) (int, error) { return len(p), nil }
func (discardResponse) WriteHeader(int)             {}

// bodyDeadline gives a request body timeout to arrive, against clients
// that declare a body and send it slowly or not at all, and lifts the
// deadline once all of it has arrived, so a long tool call on the same
// request is not cut. A body that misses the deadline fails the request and
// closes the connection.
func bodyDeadline(timeout time.Duration, next http.Handler) http.Handler {
	if timeout == 0 {
		timeout = DefaultBodyTimeout
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 { // -1: chunked, length unknown
			rc := http.NewResponseController(w)
			_ = rc.SetReadDeadline(time.Now().Add(timeout))
			r.Body = &liftOnEOF{ReadCloser: r.Body, timeout: timeout, lift: func() { _ = rc.SetReadDeadline(time.Time{}) }}
		}
		next.ServeHTTP(w, r)
	})
}

// liftOnEOF calls lift once the body has been read to its end. Any other
// error leaves the deadline in place: net/http then cannot wait for the
// rest of the body after the handler and closes the connection.
type liftOnEOF struct {
	io.ReadCloser
	timeout time.Duration
	lift    func()
	done    bool
}

func (b *liftOnEOF) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case errors.Is(err, io.EOF) && !b.done:
		b.done = true
		b.lift()
	case errors.Is(err, os.ErrDeadlineExceeded):
		err = fmt.Errorf("the request body did not arrive within %s (--body-timeout): %w", b.timeout, err)
	}
	return n, err
}
