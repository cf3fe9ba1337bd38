package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/hostguard"
	"github.com/wink-mcp/wink-mcp/profiles"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// principalKey carries the request's principal in its context.
type principalKey struct{}

// principalFrom returns the principal the guard put in ctx.
func principalFrom(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(string)
	return p
}

// guard checks every HTTP request before any MCP processing: the Host and
// Origin allowlists (403, against DNS rebinding and cross-site requests),
// the bearer token (401), the session's owner (404: an unknown, ended or
// foreign session looks the same), the session cap (503), the principal's
// workspaces quota (429), and the body size.
// A request that opens a session holds its slot from the check on (see
// sessionStore), and gives it back when it is over without one.
type guard struct {
	tokens      [][sha256.Size]byte // digests of the accepted tokens; none means none is required
	rules       hostguard.Rules     // the Host and Origin allowlists
	store       *sessionStore
	maxSessions int
	maxBody     int64
	profiles    *profiles.File // the profiles ?profile=NAME may name
	log         *slog.Logger
	next        http.Handler
	// reserve holds a slot for a request that may open a session, if one
	// is free, and says how many handed-over workspaces hold one.
	reserve func(*slot) (waiting int, ok bool)
	// opened, when set, is told the session an opening request made once
	// the request is over, to end one that did not come to be.
	opened func(id string)
	// oauth, when set, authenticates by OAuth access token instead of tokens.
	oauth *resourceServer
	// refused, when set, is told of every refused request, with the
	// status and the reason from the fixed set below.
	refused func(r *http.Request, status int, reason string)
}

func newGuard(cfg HTTPConfig, store *sessionStore, profiles *profiles.File, log *slog.Logger, next http.Handler) *guard {
	g := &guard{rules: hostguard.New(cfg.AllowedHosts, cfg.AllowedOrigins, []string{cfg.Addr}), store: store, maxSessions: cfg.MaxSessions,
		maxBody: cfg.MaxBodyBytes, profiles: profiles, log: log, next: next}
	g.reserve = func(sl *slot) (int, bool) { return 0, store.reserve(sl, g.maxSessions) }
	for _, t := range cfg.AuthTokens {
		g.tokens = append(g.tokens, sha256.Sum256([]byte(t)))
	}
	return g
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	refuse := func(status int, reason, message string) {
		g.log.Info("http request refused", "status", status, "reason", reason, "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr)
		if g.refused != nil {
			g.refused(r, status, reason)
		}
		// The connection closes after the answer: net/http would otherwise
		// read the unread body first, and a client that sent its headers
		// with "Expect: 100-continue" would be told to continue, then wait
		// the whole --body-timeout for its refusal.
		w.Header().Set("Connection", "close")
		http.Error(w, message, status)
	}
	if f := g.rules.Check(r); f != nil {
		refuse(http.StatusForbidden, f.Reason, f.Message)
		return
	}
	if inQuery(r.URL.RawQuery) {
		refuse(http.StatusBadRequest, "handle in query", "bad request: a workspace handle must not travel in a URL's query string, where proxies and logs record it; pass it as the tool's `workspace` argument")
		return
	}
	var principal string
	var ok bool
	if g.oauth != nil {
		if principal, ok = g.oauth.authenticate(w, r, refuse); !ok {
			return
		}
	} else if principal, ok = g.authenticate(r); !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="wink-mcp"`)
		refuse(http.StatusUnauthorized, "token", "unauthorized: send Authorization: Bearer <token>")
		return
	}
	// The token stops here: nothing past the guard, containers least, sees it.
	r.Header.Del("Authorization")
	id := r.Header.Get(mcpserver.HeaderKeySessionID)
	if id == "" {
		id = r.URL.Query().Get("sessionId")
	}
	switch {
	case id != "":
		end, ok := g.store.begin(id, principal)
		if !ok {
			refuse(http.StatusNotFound, "session", "unknown session: it never existed, has ended, or belongs to another client; initialize a new one")
			return
		}
		defer end()
	case r.URL.Path == streamablePath && r.Method != http.MethodPost:
		// Only initialize may come without a session; a GET stream or a
		// DELETE without one would otherwise make a session nobody ends.
		refuse(http.StatusBadRequest, "no session", "bad request: "+r.Method+" needs the Mcp-Session-Id header of a session; start one with an initialize POST")
		return
	case opensSession(r) && badWorkspaceParam(r) != nil:
		refuse(http.StatusBadRequest, "workspace name", "bad request: the "+workspaceParam+" parameter: "+badWorkspaceParam(r).Error())
		return
	case opensSession(r) && g.badProfileParam(r) != nil:
		refuse(http.StatusBadRequest, "profile name", "bad request: the "+profileParam+" parameter: "+g.badProfileParam(r).Error())
		return
	}
	ctx := context.WithValue(r.Context(), principalKey{}, principal)
	if opensSession(r) {
		sl := &slot{}
		if id == "" {
			if waiting, ok := g.reserve(sl); !ok {
				refuse(http.StatusServiceUnavailable, "session cap", g.fullMessage(waiting))
				return
			}
			if err := g.holdQuota(r, sl, principal); err != nil {
				g.settle(sl)
				g.refuseQuota(w, r, err)
				return
			}
		}
		defer g.settle(sl)
		ctx = context.WithValue(ctx, slotKey{}, sl)
	}
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, g.maxBody)
	}
	g.next.ServeHTTP(w, r.WithContext(ctx))
}

// settle gives back the slot of a request that is over without a session,
// and tells opened of the session it made.
func (g *guard) settle(sl *slot) {
	if id := g.store.release(sl); id != "" && g.opened != nil {
		g.opened(id)
	}
}

// fullMessage is the answer to a new session past the cap, n handed-over
// workspaces waiting.
func (g *guard) fullMessage(n int) string {
	msg := "too many sessions: this server serves at most " + strconv.Itoa(g.maxSessions) + " at once"
	if n > 0 {
		msg += ", counting " + strconv.Itoa(n) + " handed-over workspaces (workspace_handoff) that keep their containers until attached or expired"
	}
	return msg + "; end a session (DELETE), attach or let expire a handed-over workspace, or raise --max-sessions"
}

// badWorkspaceParam says what is wrong with the kept workspace a request
// names in its URL, nil when it names none or a good one.
func badWorkspaceParam(r *http.Request) error {
	if !r.URL.Query().Has(workspaceParam) {
		return nil
	}
	return workspace.CheckWorkspaceName(r.URL.Query().Get(workspaceParam))
}

// badProfileParam says what is wrong with the profile a request names in
// its URL, nil when it names none or one of the server's.
func (g *guard) badProfileParam(r *http.Request) error {
	if !r.URL.Query().Has(profileParam) {
		return nil
	}
	_, err := g.profiles.Get(r.URL.Query().Get(profileParam))
	return err
}

// opensSession reports whether a request is on a route that makes
// sessions: a streamable HTTP POST (an initialize makes one, even sent
// with a session's id) or an SSE stream. These are the only such routes,
// so each gets a slot (see sessionStore) whatever the route.
func opensSession(r *http.Request) bool {
	return r.Method == http.MethodPost && r.URL.Path == streamablePath || r.Method == http.MethodGet && r.URL.Path == ssePath
}

// authenticate checks the bearer token in constant time and returns the
// principal: a short digest of the token, never the token itself.
func (g *guard) authenticate(r *http.Request) (string, bool) {
	if len(g.tokens) == 0 {
		return "", true
	}
	scheme, token, found := strings.Cut(r.Header.Get("Authorization"), " ")
	if !found || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false
	}
	digest := sha256.Sum256([]byte(token))
	match := 0
	for _, t := range g.tokens {
		match |= subtle.ConstantTimeCompare(digest[:], t[:])
	}
	if match != 1 {
		return "", false
	}
	return hex.EncodeToString(digest[:8]), true
}
