package server

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/hostguard"
	"github.com/wink-mcp/wink-mcp/oauth"
)

// OAuthConfig turns on the OAuth 2.1 resource-server mode of the HTTP
// transports: clients send access tokens (JWTs) of Issuer instead of the
// static bearer tokens.
type OAuthConfig struct {
	// Issuer is the authorization server whose access tokens are accepted;
	// empty: the mode is off.
	Issuer string
	// Audience is this server's canonical URI, which tokens must name in
	// aud (RFC 8707); empty: the URL the server listens at, which only a
	// loopback address allows.
	Audience string
	// Scopes are the scopes a token must carry.
	Scopes []string
}

// validate refuses an OAuth configuration that cannot work, naming the flag.
func (c OAuthConfig) validate(addr string, staticTokens int) error {
	if c.Issuer == "" {
		if c.Audience != "" || len(c.Scopes) > 0 {
			return errors.New("--oauth-audience and --oauth-scopes need --oauth-issuer, the authorization server whose tokens to accept")
		}
		return nil
	}
	if err := oauth.CheckIssuerURL(c.Issuer); err != nil {
		return fmt.Errorf("--oauth-issuer: %w", err)
	}
	if staticTokens > 0 {
		return errors.New("--oauth-issuer and --auth-token/--auth-token-file are two ways to authenticate clients: choose one")
	}
	for _, s := range c.Scopes {
		if s == "" || strings.ContainsAny(s, " \"\\") {
			return fmt.Errorf("--oauth-scopes: %q is not a scope (no spaces, quotes or backslashes)", s)
		}
	}
	if c.Audience == "" {
		host, _, _ := net.SplitHostPort(addr)
		if !hostguard.IsLoopback(host) {
			return fmt.Errorf("--oauth-audience is needed when listening on %s: set it to the URL clients reach this server at, e.g. https://mcp.example.com%s", addr, streamablePath)
		}
		return nil
	}
	u, err := url.Parse(c.Audience)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Fragment != "" {
		return fmt.Errorf("--oauth-audience %q: must be this server's absolute http(s) URL without a fragment, e.g. https://mcp.example.com%s", c.Audience, streamablePath)
	}
	return nil
}

// resourceServer authenticates requests by OAuth access token, and
// serves the protected resource metadata (RFC 9728).
type resourceServer struct {
	verifier    *oauth.Verifier
	resource    string   // the canonical URI: the audience tokens must name
	scopes      []string // the scopes a token must carry
	metadataURL string   // where the metadata is, for WWW-Authenticate
	metadata    http.Handler
}

// newResourceServer makes the resource server of cfg for a server
// listening at listenAddr and serving MCP at path.
func newResourceServer(cfg OAuthConfig, listenAddr, path string) *resourceServer {
	resource := cfg.Audience
	if resource == "" {
		resource = "http://" + listenAddr + path
	}
	u, _ := url.Parse(resource)
	rs := &resourceServer{
		verifier:    oauth.NewVerifier(oauth.Config{Issuer: cfg.Issuer, Audience: resource, Scopes: cfg.Scopes}),
		resource:    resource,
		scopes:      cfg.Scopes,
		metadataURL: u.Scheme + "://" + u.Host + mcpserver.ProtectedResourceMetadataPath(resource),
		metadata: mcpserver.NewProtectedResourceMetadataHandler(mcpserver.ProtectedResourceMetadataConfig{
			Resource:               resource,
			AuthorizationServers:   []string{cfg.Issuer},
			ScopesSupported:        cfg.Scopes,
			BearerMethodsSupported: []string{"header"},
			ResourceName:           "wink-mcp",
		}),
	}
	return rs
}

// withMetadata serves the protected resource metadata, to anyone and
// whatever the Host (it is public), at the bare well-known path and at the
// one RFC 9728 derives from the resource's path; it passes every other
// request to next. With rs nil it is next.
func withMetadata(rs *resourceServer, next http.Handler) http.Handler {
	if rs == nil {
		return next
	}
	paths := map[string]bool{mcpserver.WellKnownProtectedResourcePath: true, mcpserver.ProtectedResourceMetadataPath(rs.resource): true}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if paths[r.URL.Path] {
			rs.metadata.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authenticate checks the request's access token and returns its
// principal: "oauth:" and a short digest of the token's issuer and
// subject, so a client keeps its sessions across tokens. When the token is
// missing or refused it answers the request itself through refuse, with
// the challenge RFC 6750 and RFC 9728 ask for, and returns false.
func (rs *resourceServer) authenticate(w http.ResponseWriter, r *http.Request, refuse func(status int, reason, message string)) (string, bool) {
	scheme, token, found := strings.Cut(r.Header.Get("Authorization"), " ")
	if !found || !strings.EqualFold(scheme, "Bearer") || token == "" {
		w.Header().Set("WWW-Authenticate", rs.challenge("", ""))
		refuse(http.StatusUnauthorized, "oauth: no token", "unauthorized: send Authorization: Bearer <access token>; the authorization server and scopes are in "+rs.metadataURL)
		return "", false
	}
	id, err := rs.verifier.Verify(r.Context(), strings.TrimSpace(token))
	var refusal *oauth.Refusal
	switch {
	case errors.As(err, &refusal) && refusal.Code == oauth.CodeInsufficientScope:
		w.Header().Set("WWW-Authenticate", rs.challenge(refusal.Code, refusal.Description))
		refuse(http.StatusForbidden, "oauth: "+refusal.Description, "forbidden: insufficient_scope: the token needs scope "+strings.Join(rs.scopes, " ")+"; "+refusal.Description)
		return "", false
	case errors.As(err, &refusal):
		w.Header().Set("WWW-Authenticate", rs.challenge(refusal.Code, refusal.Description))
		refuse(http.StatusUnauthorized, "oauth: "+refusal.Description, "unauthorized: invalid_token: "+refusal.Description)
		return "", false
	case err != nil:
		refuse(http.StatusServiceUnavailable, "oauth: issuer unreachable: "+err.Error(), "service unavailable: the token's issuer cannot be reached to check it; try again later")
		return "", false
	}
	digest := sha256.Sum256([]byte(id.Issuer + "\n" + id.Subject))
	return "oauth:" + hex.EncodeToString(digest[:8]), true
}

// challenge is the WWW-Authenticate value of a refusal (code "" when the
// request had no token).
func (rs *resourceServer) challenge(code, description string) string {
	parts := []string{`Bearer resource_metadata="` + rs.metadataURL + `"`}
	if code != "" {
		parts = append(parts, `error="`+code+`"`, `error_description="`+headerSafe(description)+`"`)
	}
	if len(rs.scopes) > 0 && code != oauth.CodeInvalidToken {
		parts = append(parts, `scope="`+strings.Join(rs.scopes, " ")+`"`)
	}
	return strings.Join(parts, ", ")
}

// headerSafe makes s fit in a quoted header parameter: printable ASCII
// without quotes or backslashes (RFC 6750 section 3).
func headerSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			return '\''
		}
		return r
	}, s)
}

// resourceServerFrom builds the resource server of cfg, nil when the
// OAuth mode is off.
func resourceServerFrom(cfg HTTPConfig, listenAddr, path string) *resourceServer {
	if cfg.OAuth.Issuer == "" {
		return nil
	}
	return newResourceServer(cfg.OAuth, listenAddr, path)
}
