// Package oauth checks OAuth 2.1 access tokens as a resource server: it
// finds an issuer's JWKS through its metadata (OpenID Connect discovery or
// RFC 8414), keeps the keys, and verifies a JWT access token's signature,
// issuer, lifetime, audience (RFC 8707) and scopes.
package oauth

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// maxDocumentBytes caps a metadata or JWKS document read from an issuer.
const maxDocumentBytes = 1 << 20

// Metadata is the part of an authorization server's metadata a resource
// server needs.
type Metadata struct {
	// Issuer is the issuer identifier the metadata states; tokens carry it in iss.
	Issuer string `json:"issuer"`
	// JWKSURI is where the issuer publishes its signing keys.
	JWKSURI string `json:"jwks_uri"`
	// URL is where the metadata was found.
	URL string `json:"-"`
}

// CheckIssuerURL says what is wrong with an issuer URL (or a URL an issuer
// names): it must be absolute https, or http on a loopback host (for tests
// and an IdP on the same machine).
func CheckIssuerURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return fmt.Errorf("%q is not an absolute URL such as https://idp.example.com", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q has a query or fragment, which an issuer identifier may not have", raw)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if ip := net.ParseIP(u.Hostname()); u.Hostname() == "localhost" || ip != nil && ip.IsLoopback() {
			return nil
		}
	}
	return fmt.Errorf("%q must use https (plain http only on a loopback host)", raw)
}

// metadataURLs are where issuer's metadata may be: OpenID Connect
// discovery, then RFC 8414 (path inserted after the well-known segment).
func metadataURLs(issuer string) []string {
	trimmed := strings.TrimSuffix(issuer, "/")
	u, _ := url.Parse(trimmed)
	rfc8414 := u.Scheme + "://" + u.Host + "/.well-known/oauth-authorization-server" + u.Path
	return []string{trimmed + "/.well-known/openid-configuration", rfc8414}
}

// Discover fetches issuer's metadata and checks it names issuer and a JWKS.
func Discover(ctx context.Context, client *http.Client, issuer string) (Metadata, error) {
	if err := CheckIssuerURL(issuer); err != nil {
		return Metadata{}, err
	}
	var errs []string
	for _, where := range metadataURLs(issuer) {
		var m Metadata
		if err := getJSON(ctx, client, where, &m); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		m.URL = where
		if strings.TrimSuffix(m.Issuer, "/") != strings.TrimSuffix(issuer, "/") {
			return Metadata{}, fmt.Errorf("the metadata at %s names issuer %q, not %q: set --oauth-issuer to the issuer exactly", where, m.Issuer, issuer)
		}
		if m.JWKSURI == "" {
			return Metadata{}, fmt.Errorf("the metadata at %s has no jwks_uri: the issuer publishes no signing keys", where)
		}
		if err := CheckIssuerURL(m.JWKSURI); err != nil {
			return Metadata{}, fmt.Errorf("the metadata at %s: jwks_uri %w", where, err)
		}
		return m, nil
	}
	return Metadata{}, fmt.Errorf("no metadata for issuer %s: %s", issuer, strings.Join(errs, "; "))
}

// getJSON decodes the JSON document at where into v.
func getJSON(ctx context.Context, client *http.Client, where string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, where, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", where, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", where, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocumentBytes+1))
	if err != nil {
		return fmt.Errorf("GET %s: %w", where, err)
	}
	if len(body) > maxDocumentBytes {
		return fmt.Errorf("GET %s: the document is over %d bytes", where, maxDocumentBytes)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: not JSON: %w", where, err)
	}
	return nil
}
