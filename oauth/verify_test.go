package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

const audience = "http://127.0.0.1:8080/mcp"

// issuer is a local authorization server: OIDC metadata and a JWKS of one
// RSA key, counting the JWKS fetches.
type issuer struct {
	srv     *httptest.Server
	key     *rsa.PrivateKey
	kid     string
	fetches atomic.Int32
}

func newIssuer(t testing.TB) *issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	is := &issuer{key: key, kid: "k1"}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": is.srv.URL, "jwks_uri": is.srv.URL + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, _ *http.Request) {
		is.fetches.Add(1)
		set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &is.key.PublicKey, KeyID: is.kid, Algorithm: "RS256", Use: "sig"}}}
		_ = json.NewEncoder(w).Encode(set)
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	return is
}

// claims are a valid token's claims, for tests to spoil.
func (is *issuer) claims() map[string]any {
	now := time.Now()
	return map[string]any{"iss": is.srv.URL, "sub": "client-a", "aud": []string{audience}, "exp": now.Add(time.Minute).Unix(),
		"iat": now.Unix(), "nbf": now.Unix(), "scp": []string{"mcp"}}
}

// sign signs claims with key (the issuer's when nil) under kid.
func (is *issuer) sign(t testing.TB, claims map[string]any, alg jose.SignatureAlgorithm, key any, kid string) string {
	t.Helper()
	if key == nil {
		key = is.key
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, (&jose.SignerOptions{}).WithHeader("kid", kid).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (is *issuer) verifier(scopes ...string) *Verifier {
	return NewVerifier(Config{Issuer: is.srv.URL, Audience: audience, Scopes: scopes, Leeway: 5 * time.Second})
}

func TestVerifyAcceptsAValidToken(t *testing.T) {
	is := newIssuer(t)
	id, err := is.verifier("mcp").Verify(context.Background(), is.sign(t, is.claims(), jose.RS256, nil, is.kid))
	if err != nil || id.Subject != "client-a" || id.Issuer != is.srv.URL {
		t.Fatalf("got %+v, %v", id, err)
	}
	c := is.claims()
	delete(c, "scp")
	c["scope"] = "other mcp"
	if _, err := is.verifier("mcp").Verify(context.Background(), is.sign(t, c, jose.RS256, nil, is.kid)); err != nil {
		t.Fatalf("a scope claim (RFC 9068): %v", err)
	}
}

func TestVerifyRefuses(t *testing.T) {
	is := newIssuer(t)
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	otherRSA, _ := rsa.GenerateKey(rand.Reader, 2048)
	with := func(k string, v any) map[string]any {
		c := is.claims()
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	valid := is.sign(t, is.claims(), jose.RS256, nil, is.kid)
	parts := strings.Split(valid, ".")
	b64 := base64.RawURLEncoding.EncodeToString
	forged, _ := json.Marshal(with("sub", "client-b"))
	// HMAC "signed" with the issuer's public key, as in the classic confusion attack.
	pub, _ := json.Marshal(jose.JSONWebKey{Key: &is.key.PublicKey})
	tests := []struct {
		name, token, code, want string
	}{
		{"expired", is.sign(t, with("exp", time.Now().Add(-time.Minute).Unix()), jose.RS256, nil, is.kid), CodeInvalidToken, "expired"},
		{"not yet valid", is.sign(t, with("nbf", time.Now().Add(time.Minute).Unix()), jose.RS256, nil, is.kid), CodeInvalidToken, "not valid yet"},
		{"no expiry", is.sign(t, with("exp", nil), jose.RS256, nil, is.kid), CodeInvalidToken, "no expiry"},
		{"no subject", is.sign(t, with("sub", nil), jose.RS256, nil, is.kid), CodeInvalidToken, "no subject"},
		{"wrong audience", is.sign(t, with("aud", []string{"https://other.example/mcp"}), jose.RS256, nil, is.kid), CodeInvalidToken, "audience"},
		{"wrong issuer", is.sign(t, with("iss", "https://evil.example"), jose.RS256, nil, is.kid), CodeInvalidToken, "issuer"},
		{"alg none", b64([]byte(`{"alg":"none","kid":"k1"}`)) + "." + parts[1] + ".", CodeInvalidToken, "allowed algorithm"},
		{"HMAC with the public key", is.sign(t, is.claims(), jose.HS256, pub, is.kid), CodeInvalidToken, "allowed algorithm"},
		{"tampered payload", parts[0] + "." + b64(forged) + "." + parts[2], CodeInvalidToken, "signature"},
		{"another key, same kid", is.sign(t, is.claims(), jose.RS256, otherRSA, is.kid), CodeInvalidToken, "signature"},
		{"unknown kid", is.sign(t, is.claims(), jose.ES256, ecKey, "k9"), CodeInvalidToken, "no key"},
		{"not a JWT", "opaque-token-0123456789", CodeInvalidToken, "allowed algorithm"},
		{"insufficient scope", is.sign(t, with("scp", []string{"other"}), jose.RS256, nil, is.kid), CodeInsufficientScope, "lacks scope mcp"},
	}
	v := is.verifier("mcp")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := v.Verify(context.Background(), tt.token)
			var r *Refusal
			if !errors.As(err, &r) || r.Code != tt.code || !strings.Contains(r.Description, tt.want) {
				t.Fatalf("got %v, want %s containing %q", err, tt.code, tt.want)
			}
			if strings.Contains(r.Description, tt.token) {
				t.Fatalf("the refusal quotes the token: %s", r.Description)
			}
		})
	}
}

func TestUnknownKeyRefetchesTheJWKSAtMostOncePerInterval(t *testing.T) {
	is := newIssuer(t)
	v := NewVerifier(Config{Issuer: is.srv.URL, Audience: audience, MinRefresh: time.Hour})
	if _, err := v.Verify(context.Background(), is.sign(t, is.claims(), jose.RS256, nil, is.kid)); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		_, _ = v.Verify(context.Background(), is.sign(t, is.claims(), jose.RS256, nil, "made-up"))
	}
	if n := is.fetches.Load(); n != 1 {
		t.Fatalf("%d JWKS fetches for 5 unknown kids within the interval, want 1", n)
	}
	// A rotation: the issuer's new key is picked up on its first token.
	rotated := NewVerifier(Config{Issuer: is.srv.URL, Audience: audience, MinRefresh: time.Nanosecond})
	if _, err := rotated.Verify(context.Background(), is.sign(t, is.claims(), jose.RS256, nil, is.kid)); err != nil {
		t.Fatal(err)
	}
	is.key, _ = rsa.GenerateKey(rand.Reader, 2048)
	is.kid = "k2"
	if _, err := rotated.Verify(context.Background(), is.sign(t, is.claims(), jose.RS256, nil, "k2")); err != nil {
		t.Fatalf("after a rotation: %v", err)
	}
}

func TestDiscoverChecksTheMetadata(t *testing.T) {
	is := newIssuer(t)
	if _, n, err := CheckIssuer(context.Background(), http.DefaultClient, is.srv.URL); err != nil || n != 1 {
		t.Fatalf("got %d keys, %v", n, err)
	}
	for _, bad := range []struct{ issuer, want string }{
		{"https://", "not an absolute URL"},
		{"http://idp.example.com", "must use https"},
		{is.srv.URL + "/elsewhere", "no metadata"},
	} {
		if _, err := Discover(context.Background(), http.DefaultClient, bad.issuer); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: got %v, want %q", bad.issuer, err, bad.want)
		}
	}
}

func TestAnUnreachableIssuerIsNotTheTokensFault(t *testing.T) {
	is := newIssuer(t)
	token := is.sign(t, is.claims(), jose.RS256, nil, is.kid)
	is.srv.Close()
	_, err := is.verifier().Verify(context.Background(), token)
	var r *Refusal
	if err == nil || errors.As(err, &r) || !strings.Contains(err.Error(), "no metadata for issuer") {
		t.Fatalf("got %v, want an error that is not a refusal", err)
	}
}

// BenchmarkVerify is the cost a request pays for its token once the keys
// are held: parse, one RS256 signature, the claims.
func BenchmarkVerify(b *testing.B) {
	is := newIssuer(b)
	v := is.verifier("mcp")
	token := is.sign(b, is.claims(), jose.RS256, nil, is.kid)
	if _, err := v.Verify(context.Background(), token); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := v.Verify(context.Background(), token); err != nil {
			b.Fatal(err)
		}
	}
}
