package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// keySet keeps an issuer's public signing keys. It fetches them on first
// use, again when they are older than maxAge, and again when a token names
// a key it does not hold (a rotation), but at most once per minRefresh, so
// tokens with made-up key ids cannot make it hammer the issuer.
type keySet struct {
	issuer     string
	client     *http.Client
	minRefresh time.Duration
	maxAge     time.Duration

	mu        sync.Mutex
	meta      Metadata
	keys      []jose.JSONWebKey
	fetched   time.Time // when keys were fetched
	attempted time.Time // when a fetch was last tried
}

// lookup returns the keys a token with key id kid may be signed with ("":
// every key).
func (k *keySet) lookup(ctx context.Context, kid string) ([]jose.JSONWebKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	found := k.match(kid)
	fresh := time.Since(k.fetched) < k.maxAge
	if len(found) > 0 && fresh {
		return found, nil
	}
	if time.Since(k.attempted) < k.minRefresh {
		switch {
		case len(found) > 0:
			return found, nil
		case k.fetched.IsZero():
			return nil, fmt.Errorf("the keys of issuer %s could not be fetched a moment ago", k.issuer)
		}
		return nil, fmt.Errorf("%w %q (fetched %s ago)", errUnknownKey, kid, time.Since(k.fetched).Round(time.Second))
	}
	if err := k.refresh(ctx); err != nil {
		if len(found) > 0 {
			return found, nil // keep using what we have while the issuer is down
		}
		return nil, err
	}
	if found = k.match(kid); len(found) == 0 {
		return nil, fmt.Errorf("%w %q", errUnknownKey, kid)
	}
	return found, nil
}

// errUnknownKey is a token naming a key the issuer does not publish.
var errUnknownKey = errors.New("the issuer's keys have no key")

// match returns the held keys with id kid (all of them for "").
func (k *keySet) match(kid string) []jose.JSONWebKey {
	if kid == "" {
		return k.keys
	}
	var out []jose.JSONWebKey
	for _, key := range k.keys {
		if key.KeyID == kid {
			out = append(out, key)
		}
	}
	return out
}

// refresh fetches the metadata (once) and the keys; k.mu is held.
func (k *keySet) refresh(ctx context.Context) error {
	k.attempted = time.Now()
	if k.meta.JWKSURI == "" {
		meta, err := Discover(ctx, k.client, k.issuer)
		if err != nil {
			return err
		}
		k.meta = meta
	}
	keys, err := fetchKeys(ctx, k.client, k.meta.JWKSURI)
	if err != nil {
		return err
	}
	k.keys, k.fetched = keys, time.Now()
	return nil
}

// metadata returns the issuer's metadata, fetching it if need be.
func (k *keySet) metadata(ctx context.Context) (Metadata, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.meta.JWKSURI != "" {
		return k.meta, nil
	}
	if time.Since(k.attempted) < k.minRefresh {
		return Metadata{}, fmt.Errorf("the metadata of issuer %s could not be fetched a moment ago", k.issuer)
	}
	return k.meta, k.refresh(ctx)
}

// fetchKeys reads a JWKS and keeps its public signing keys: symmetric and
// private keys, and keys for encryption, are left out.
func fetchKeys(ctx context.Context, client *http.Client, jwksURI string) ([]jose.JSONWebKey, error) {
	var set jose.JSONWebKeySet
	if err := getJSON(ctx, client, jwksURI, &set); err != nil {
		return nil, err
	}
	var keys []jose.JSONWebKey
	for _, key := range set.Keys {
		if (key.Use == "" || key.Use == "sig") && key.IsPublic() && key.Valid() {
			keys = append(keys, key)
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("the JWKS at %s has no public signing key", jwksURI)
	}
	return keys, nil
}

// CheckIssuer fetches issuer's metadata and keys once, as the server will,
// and says what it found.
func CheckIssuer(ctx context.Context, client *http.Client, issuer string) (Metadata, int, error) {
	meta, err := Discover(ctx, client, issuer)
	if err != nil {
		return Metadata{}, 0, err
	}
	keys, err := fetchKeys(ctx, client, meta.JWKSURI)
	if err != nil {
		return meta, 0, err
	}
	return meta, len(keys), nil
}
