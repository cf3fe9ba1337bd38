package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// localIssuer serves OIDC metadata and the JWKS of key, and returns its URL.
func localIssuer(t *testing.T, key *ecdsa.PrivateKey) string {
	t.Helper()
	var srv *httptest.Server
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": srv.URL, "jwks_uri": srv.URL + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k"}}})
	})
	srv = httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func signES256(t *testing.T, key *ecdsa.PrivateKey, claims map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithHeader("kid", "k"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestGuardInOAuthMode(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	issuer := localIssuer(t, key)
	cfg := HTTPConfig{Addr: "127.0.0.1:8080", MaxSessions: 2, MaxBodyBytes: 1024, OAuth: OAuthConfig{Issuer: issuer, Scopes: []string{"mcp", "files"}}}
	rs := newResourceServer(cfg.OAuth, "127.0.0.1:8080", streamablePath)
	var sawAuthorization bool
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawAuthorization = r.Header.Get("Authorization") != ""
		_, _ = w.Write([]byte("ok principal=" + principalFrom(r.Context())))
	})
	g := newGuard(cfg, newSessionStore(), nil, slog.New(slog.DiscardHandler), next)
	g.oauth = rs
	h := withMetadata(rs, g)
	claims := func(sub, scope string) map[string]any {
		return map[string]any{"iss": issuer, "sub": sub, "aud": "http://127.0.0.1:8080/mcp", "exp": time.Now().Add(time.Minute).Unix(), "scope": scope}
	}
	metadataParam := `resource_metadata="http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp"`

	w := send(h, "GET", "/.well-known/oauth-protected-resource", map[string]string{"Host": "anything.example"}, "")
	if w.Code != 200 || !strings.Contains(w.Body.String(), `"resource":"http://127.0.0.1:8080/mcp"`) || !strings.Contains(w.Body.String(), `"authorization_servers":["`+issuer+`"]`) {
		t.Fatalf("metadata: %d %s", w.Code, w.Body)
	}
	w = send(h, "POST", "/mcp", nil, "{}")
	if w.Code != 401 || w.Header().Get("WWW-Authenticate") != `Bearer `+metadataParam+`, scope="mcp files"` {
		t.Fatalf("no token: %d %q", w.Code, w.Header().Get("WWW-Authenticate"))
	}
	w = send(h, "POST", "/mcp", map[string]string{"Authorization": "Bearer not-a-jwt"}, "{}")
	if w.Code != 401 || !strings.Contains(w.Header().Get("WWW-Authenticate"), `error="invalid_token"`) || !strings.Contains(w.Header().Get("WWW-Authenticate"), metadataParam) {
		t.Fatalf("bad token: %d %q", w.Code, w.Header().Get("WWW-Authenticate"))
	}
	w = send(h, "POST", "/mcp", map[string]string{"Authorization": "Bearer " + signES256(t, key, claims("alice", "mcp"))}, "{}")
	if w.Code != 403 || !strings.Contains(w.Header().Get("WWW-Authenticate"), `error="insufficient_scope"`) || !strings.Contains(w.Header().Get("WWW-Authenticate"), `scope="mcp files"`) ||
		!strings.Contains(w.Body.String(), "lacks scope files") {
		t.Fatalf("a missing scope: %d %q %s", w.Code, w.Header().Get("WWW-Authenticate"), w.Body)
	}
	alice := send(h, "POST", "/mcp", map[string]string{"Authorization": "Bearer " + signES256(t, key, claims("alice", "mcp files"))}, "{}")
	bob := send(h, "POST", "/mcp", map[string]string{"Authorization": "Bearer " + signES256(t, key, claims("bob", "mcp files"))}, "{}")
	alice2 := send(h, "POST", "/mcp", map[string]string{"Authorization": "bearer " + signES256(t, key, claims("alice", "files mcp"))}, "{}")
	if alice.Code != 200 || !strings.Contains(alice.Body.String(), "principal=oauth:") || alice.Body.String() == bob.Body.String() || alice.Body.String() != alice2.Body.String() {
		t.Fatalf("principals: alice %q, bob %q, alice again %q", alice.Body, bob.Body, alice2.Body)
	}
	if sawAuthorization {
		t.Fatal("the Authorization header went past the guard")
	}
}

func TestOAuthConfigValidation(t *testing.T) {
	tests := []struct {
		name string
		cfg  HTTPConfig
		want string
	}{
		{"audience without issuer", HTTPConfig{Addr: "127.0.0.1:1", OAuth: OAuthConfig{Audience: "https://x/mcp"}}, "need --oauth-issuer"},
		{"plain http issuer", HTTPConfig{Addr: "127.0.0.1:1", OAuth: OAuthConfig{Issuer: "http://idp.example.com"}}, "must use https"},
		{"both modes", HTTPConfig{Addr: "127.0.0.1:1", AuthTokens: []string{goodToken}, OAuth: OAuthConfig{Issuer: "https://idp.example.com"}}, "choose one"},
		{"no audience off loopback", HTTPConfig{Addr: "0.0.0.0:8080", OAuth: OAuthConfig{Issuer: "https://idp.example.com"}}, "--oauth-audience is needed"},
		{"relative audience", HTTPConfig{Addr: "0.0.0.0:8080", OAuth: OAuthConfig{Issuer: "https://idp.example.com", Audience: "/mcp"}}, "absolute http(s) URL"},
		{"scope with a space", HTTPConfig{Addr: "127.0.0.1:1", OAuth: OAuthConfig{Issuer: "https://idp.example.com", Scopes: []string{"a b"}}}, "--oauth-scopes"},
	}
	for _, tt := range tests {
		tt.cfg.MaxSessions, tt.cfg.MaxBodyBytes = 1, 1<<20
		if err := tt.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want %q", tt.name, err, tt.want)
		}
	}
	ok := HTTPConfig{Addr: "0.0.0.0:8080", MaxSessions: 1, MaxBodyBytes: 1 << 20, OAuth: OAuthConfig{Issuer: "https://idp.example.com", Audience: "https://mcp.example.com/mcp"}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("OAuth off loopback with an audience and no static token: %v", err)
	}
}

func TestGuardInOAuthModeWhenTheIssuerIsDown(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	cfg := HTTPConfig{Addr: "127.0.0.1:8080", MaxSessions: 2, MaxBodyBytes: 1024, OAuth: OAuthConfig{Issuer: "http://127.0.0.1:1"}}
	g := newGuard(cfg, newSessionStore(), nil, slog.New(slog.DiscardHandler), http.NotFoundHandler())
	g.oauth = newResourceServer(cfg.OAuth, "127.0.0.1:8080", streamablePath)
	token := signES256(t, key, map[string]any{"iss": "http://127.0.0.1:1", "sub": "a", "aud": "http://127.0.0.1:8080/mcp", "exp": time.Now().Add(time.Minute).Unix()})
	w := send(g, "POST", "/mcp", map[string]string{"Authorization": "Bearer " + token}, "{}")
	if w.Code != 503 || !strings.Contains(w.Body.String(), "issuer cannot be reached") {
		t.Fatalf("got %d %s, want 503", w.Code, w.Body)
	}
}
