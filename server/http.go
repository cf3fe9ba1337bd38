package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
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
	// bodyReadTimeout bounds the upload of one request body.
	bodyReadTimeout = 30 * time.Second
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
	// MaxBodyBytes caps a request body.
	MaxBodyBytes int64
	// DrainTimeout bounds how long shutdown waits for tool calls in flight.
	DrainTimeout time.Duration
}

// DefaultHTTPConfig returns the defaults: loopback only, no token.
func DefaultHTTPConfig() HTTPConfig {
	return HTTPConfig{Addr: DefaultAddr, MaxSessions: DefaultMaxSessions, MaxBodyBytes: DefaultMaxBodyBytes, DrainTimeout: DefaultDrainTimeout}
}

// Validate refuses settings that would expose the server unsafely.
func (c HTTPConfig) Validate() error {
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return fmt.Errorf("address %q: %w", c.Addr, err)
	}
	if !isLoopback(host) && len(c.AuthTokens) == 0 {
		return fmt.Errorf("refusing to listen on %s without a bearer token: anyone who can reach it could run commands. "+
			"Set --auth-token-file or WINK_AUTH_TOKEN, or listen on a loopback address such as %s", c.Addr, DefaultAddr)
	}
	for _, t := range c.AuthTokens {
		if len(t) < 16 {
			return errors.New("an auth token is shorter than 16 characters; use a long random one, e.g. `openssl rand -hex 32`")
		}
	}
	if c.MaxSessions < 1 || c.MaxBodyBytes < 64<<10 || c.DrainTimeout < 0 {
		return fmt.Errorf("max sessions %d must be at least 1, max body %d at least 64 KiB", c.MaxSessions, c.MaxBodyBytes)
	}
	return nil
}

// ServeHTTP serves one HTTP transport ("http": streamable HTTP at /mcp;
// "sse": SSE at /sse with messages at /message) until ctx is done. Then it
// stops accepting, lets tool calls in flight finish for up to the drain
// timeout, and closes every connection, which cancels what is still running.
func (s *Server) ServeHTTP(ctx context.Context, transport string) error {
	cfg := s.cfg.HTTP
	handler, closeTransport, err := s.transportHandler(transport)
	if err != nil {
		return err
	}
	defer closeTransport()
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Addr, err)
	}
	srv := &http.Server{
		Handler:           newGuard(cfg, s.sessions, s.log, bodyDeadline(handler)),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	path := streamablePath
	if transport == TransportSSE {
		path = ssePath
	}
	s.log.Info("serving MCP over HTTP", "transport", transport, "addr", ln.Addr().String(), "url", "http://"+ln.Addr().String()+path,
		"auth", len(cfg.AuthTokens) > 0, "max_sessions", cfg.MaxSessions)
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

// transportHandler builds the mcp-go transport for transport.
func (s *Server) transportHandler(transport string) (http.Handler, func(), error) {
	// mcp-go's transports log session ids at info level; ours never do.
	quiet := slog.New(minLevel{Handler: s.log.Handler(), min: slog.LevelWarn})
	switch transport {
	case TransportHTTP:
		h := mcpserver.NewStreamableHTTPServer(s.mcp,
			mcpserver.WithEndpointPath(streamablePath),
			mcpserver.WithSessionIdManagerResolver(sessionIDResolver{s.sessions}),
			mcpserver.WithSessionIdleTTL(s.cfg.Workspace.IdleTimeout),
			// The 2026-07-28 revision has no sessions, so no session to give a container to.
			mcpserver.WithStreamableHTTPProtocolVersions(mcp.LegacyProtocolVersions()...),
			mcpserver.WithStreamableHTTPLogger(quiet),
			// Resumable streams; also makes mcp-go deliver every notification
			// of a request exactly once (see eventLog).
			mcpserver.WithEventStore(newEventLog()),
		)
		mux := http.NewServeMux()
		mux.Handle(streamablePath, h)
		return mux, func() { _ = h.Shutdown(context.Background()) }, nil
	case TransportSSE:
		h := mcpserver.NewSSEServer(s.mcp,
			mcpserver.WithSSEEndpoint(ssePath),
			mcpserver.WithMessageEndpoint(messagePath),
			mcpserver.WithSessionIDGenerator(func(ctx context.Context, _ *http.Request) (string, error) {
				id := newID()
				s.sessions.add(id, principalFrom(ctx))
				return id, nil
			}),
			mcpserver.WithKeepAlive(true),
			mcpserver.WithKeepAliveInterval(30*time.Second),
		)
		mux := http.NewServeMux()
		mux.Handle(ssePath, h.SSEHandler())
		mux.Handle(messagePath, h.MessageHandler())
		return mux, func() {}, nil
	}
	return nil, nil, fmt.Errorf("unknown transport %q: want stdio, sse or http", transport)
}

// sessionIDResolver gives each streamable HTTP request a session id manager
// bound to the request's principal.
type sessionIDResolver struct{ store *sessionStore }

func (r sessionIDResolver) ResolveSessionIdManager(req *http.Request) mcpserver.SessionIdManager {
	if req == nil {
		return sessionIDs{store: r.store} // the transport's own sweeper
	}
	return sessionIDs{store: r.store, principal: principalFrom(req.Context())}
}

// bodyDeadline gives a request body bodyReadTimeout to arrive, against
// clients that send it byte by byte, and lifts the deadline once it has, so
// a long tool call on the same request is not cut.
func bodyDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Body != nil {
			rc := http.NewResponseController(w)
			_ = rc.SetReadDeadline(time.Now().Add(bodyReadTimeout))
			r.Body = &liftOnEOF{ReadCloser: r.Body, lift: func() { _ = rc.SetReadDeadline(time.Time{}) }}
		}
		next.ServeHTTP(w, r)
	})
}

// liftOnEOF calls lift once when the body has been read to its end.
type liftOnEOF struct {
	io.ReadCloser
	lift func()
	done bool
}

func (b *liftOnEOF) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !b.done {
		b.done = true
		b.lift()
	}
	return n, err
}

// minLevel is a slog.Handler that drops records below min.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevel{Handler: h.Handler.WithAttrs(attrs), min: h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{Handler: h.Handler.WithGroup(name), min: h.min}
}
