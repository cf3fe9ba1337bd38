package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Defaults of Config.
const (
	DefaultLeeway     = 5 * time.Second
	DefaultMinRefresh = 10 * time.Second
	DefaultMaxKeyAge  = time.Hour
)

// AllowedAlgorithms are the signature algorithms a token may use: public-key
// ones only. "none" and the HMAC ones (which a forger could "sign" with the
// issuer's public key) are refused before any key is looked at.
var AllowedAlgorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}

// Config says which tokens a Verifier accepts.
type Config struct {
	// Issuer is the authorization server whose tokens are accepted.
	Issuer string
	// Audience is the resource's canonical URI a token must name in aud.
	Audience string
	// Scopes are the scopes a token must all carry (in scope or scp).
	Scopes []string
	// Client fetches the issuer's metadata and keys; nil: a client with a 10 s timeout.
	Client *http.Client
	// Leeway is the clock skew allowed on exp, nbf and iat; 0: DefaultLeeway.
	Leeway time.Duration
	// MinRefresh is the least time between two fetches of the keys; 0: DefaultMinRefresh.
	MinRefresh time.Duration
}

// Refusal codes (RFC 6750 section 3.1).
const (
	CodeInvalidToken      = "invalid_token"
	CodeInsufficientScope = "insufficient_scope"
)

// Refusal is why a token was refused, as a client may be told.
type Refusal struct {
	// Code is CodeInvalidToken (answer 401) or CodeInsufficientScope (403).
	Code string
	// Description says what is wrong; it never quotes the token.
	Description string
}

func (r *Refusal) Error() string { return r.Code + ": " + r.Description }

// Verifier checks access tokens of one issuer for one resource.
type Verifier struct {
	cfg  Config
	keys *keySet
	now  func() time.Time
}

// NewVerifier returns a Verifier for cfg; it fetches nothing until a token
// is checked.
func NewVerifier(cfg Config) *Verifier {
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Leeway == 0 {
		cfg.Leeway = DefaultLeeway
	}
	if cfg.MinRefresh == 0 {
		cfg.MinRefresh = DefaultMinRefresh
	}
	return &Verifier{cfg: cfg, now: time.Now,
		keys: &keySet{issuer: cfg.Issuer, client: cfg.Client, minRefresh: cfg.MinRefresh, maxAge: DefaultMaxKeyAge}}
}

// Identity is who a valid token speaks for.
type Identity struct {
	// Issuer and Subject are the token's iss and sub.
	Issuer, Subject string
}

// accessClaims are the claims beyond the registered ones that Verify reads.
type accessClaims struct {
	Scope string          `json:"scope"` // RFC 9068, space-separated
	Scp   json.RawMessage `json:"scp"`   // Hydra and others: a list or a space-separated string
}

// scopes returns the scopes the token carries.
func (c accessClaims) scopes() []string {
	out := strings.Fields(c.Scope)
	var list []string
	var one string
	switch {
	case json.Unmarshal(c.Scp, &list) == nil:
		out = append(out, list...)
	case json.Unmarshal(c.Scp, &one) == nil:
		out = append(out, strings.Fields(one)...)
	}
	return out
}

// Verify checks token and returns whom it speaks for, or a *Refusal, or
// another error when the issuer's metadata or keys cannot be fetched.
func (v *Verifier) Verify(ctx context.Context, token string) (Identity, error) {
	invalid := func(format string, args ...any) (Identity, error) {
		return Identity{}, &Refusal{Code: CodeInvalidToken, Description: fmt.Sprintf(format, args...)}
	}
	parsed, err := jwt.ParseSigned(token, AllowedAlgorithms)
	if err != nil {
		return invalid("not a JWT signed with an allowed algorithm (%s)", algorithmNames())
	}
	if len(parsed.Headers) != 1 {
		return invalid("the token must have exactly one signature")
	}
	keys, err := v.keys.lookup(ctx, parsed.Headers[0].KeyID)
	switch {
	case errors.Is(err, errUnknownKey):
		return invalid("the signing key is unknown: %v", err)
	case err != nil:
		return Identity{}, err // the issuer is unreachable or broken: not the token's fault
	}
	var std jwt.Claims
	var extra accessClaims
	verified := false
	for _, key := range keys {
		if parsed.Claims(key.Key, &std, &extra) == nil {
			verified = true
			break
		}
	}
	if !verified {
		return invalid("the signature does not verify with the issuer's keys")
	}
	meta, err := v.keys.metadata(ctx)
	if err != nil {
		return Identity{}, err
	}
	if std.Expiry == nil {
		return invalid("the token has no expiry (exp)")
	}
	if std.Subject == "" {
		return invalid("the token has no subject (sub)")
	}
	expected := jwt.Expected{Issuer: meta.Issuer, AnyAudience: jwt.Audience{v.cfg.Audience}, Time: v.now()}
	if err := std.ValidateWithLeeway(expected, v.cfg.Leeway); err != nil {
		return invalid("%s", claimProblem(err, meta.Issuer, v.cfg.Audience))
	}
	have := extra.scopes()
	var missing []string
	for _, s := range v.cfg.Scopes {
		if !slices.Contains(have, s) {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		return Identity{}, &Refusal{Code: CodeInsufficientScope, Description: "the token lacks scope " + strings.Join(missing, " ")}
	}
	return Identity{Issuer: std.Issuer, Subject: std.Subject}, nil
}

// claimProblem explains a failed claim check.
func claimProblem(err error, issuer, audience string) string {
	switch {
	case errors.Is(err, jwt.ErrExpired):
		return "the token has expired"
	case errors.Is(err, jwt.ErrNotValidYet), errors.Is(err, jwt.ErrIssuedInTheFuture):
		return "the token is not valid yet"
	case errors.Is(err, jwt.ErrInvalidIssuer):
		return "the token's issuer is not " + issuer
	case errors.Is(err, jwt.ErrInvalidAudience):
		return "the token's audience does not include " + audience
	}
	return err.Error()
}

// algorithmNames lists AllowedAlgorithms for a message.
func algorithmNames() string {
	names := make([]string, len(AllowedAlgorithms))
	for i, a := range AllowedAlgorithms {
		names[i] = string(a)
	}
	return strings.Join(names, ", ")
}
