package doctor

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/wink-mcp/wink-mcp/oauth"
)

// Option adds to what Run checks.
type Option func(*doctor)

// WithOAuthIssuer has Run check the authorization server whose tokens the
// HTTP transports accept (--oauth-issuer): its metadata and its keys.
func WithOAuthIssuer(issuer string) Option {
	return func(d *doctor) { d.oauthIssuer = issuer }
}

// optionalChecks are the checks of the options Run was given, after the others.
func (d *doctor) optionalChecks() []check {
	if d.oauthIssuer == "" {
		return nil
	}
	return []check{{"oauth", d.oauthIssuerCheck}}
}

// oauthIssuerCheck fetches the issuer's metadata and JWKS, as the server does
// on the first token, and says what it found.
func (d *doctor) oauthIssuerCheck(ctx context.Context) Result {
	client := &http.Client{Timeout: 10 * time.Second}
	meta, keys, err := oauth.CheckIssuer(ctx, client, d.oauthIssuer)
	if err != nil {
		return Result{Status: Fail, Detail: err.Error(),
			Fix: "check --oauth-issuer is the issuer identifier exactly (as its metadata states it) and that this host reaches it"}
	}
	return Result{Status: OK, Detail: fmt.Sprintf("issuer %s: metadata at %s, %d signing key(s) at %s", meta.Issuer, meta.URL, keys, meta.JWKSURI)}
}
