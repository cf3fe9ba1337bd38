package doctor

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
)

func TestOAuthIssuerCheck(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	var srv *httptest.Server
	jwks := func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k", Use: "sig"}}})
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": srv.URL, "jwks_uri": srv.URL + "/keys"})
	})
	mux.HandleFunc("/keys", jwks)
	srv = httptest.NewServer(mux)
	defer srv.Close()

	r := (&doctor{oauthIssuer: srv.URL}).oauthIssuerCheck(context.Background())
	if r.Status != OK || !strings.Contains(r.Detail, "1 signing key(s) at "+srv.URL+"/keys") || !strings.Contains(r.Detail, "oauth-authorization-server") {
		t.Fatalf("RFC 8414 metadata: %+v", r)
	}
	r = (&doctor{oauthIssuer: srv.URL + "/nope"}).oauthIssuerCheck(context.Background())
	if r.Status != Fail || !strings.Contains(r.Detail, "no metadata for issuer") || r.Fix == "" {
		t.Fatalf("a wrong issuer: %+v", r)
	}
}
