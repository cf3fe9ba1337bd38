package workspace

import (
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/wink-mcp/wink-mcp/egress"
	"github.com/wink-mcp/wink-mcp/engine"
)

// Where a session's container finds the certificates it trusts.
const (
	// TrustBundlePath holds the public roots of this machine, the
	// --ca-bundle and wink-mcp's egress CA; it is also mounted over the
	// system bundle Debian-family images read.
	TrustBundlePath = "/etc/wink-mcp/ca-bundle.pem"
	// TrustExtraPath holds only the --ca-bundle and the egress CA, for
	// clients that add to their own roots (NODE_EXTRA_CA_CERTS).
	TrustExtraPath = "/etc/wink-mcp/extra-ca.pem"
	// systemBundlePath is the system bundle of Debian, Ubuntu and Alpine.
	systemBundlePath = "/etc/ssl/certs/ca-certificates.crt"
)

// hostRoots are where this machine keeps its public roots, by family.
var hostRoots = []string{"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"}

// trust is what the containers trust besides their image (--ca-bundle and
// the egress CA), and what the proxy injects (--credentials). A nil trust
// changes nothing.
type trust struct {
	creds *egress.Credentials
	ca    *egress.Authority // nil without credentials
	roots *x509.CertPool
	// bundle and extra are the files of this machine mounted at
	// TrustBundlePath and TrustExtraPath.
	bundle, extra string
}

// newTrust makes the CA (with credentials) and writes the files the
// containers mount, under the cache directory; nil without either flag.
func newTrust(cfg *Config) (*trust, error) {
	if cfg.Credentials == nil && cfg.CABundle == "" {
		return nil, nil
	}
	t := &trust{creds: cfg.Credentials}
	var extra []byte
	if cfg.CABundle != "" {
		b, err := os.ReadFile(cfg.CABundle)
		if err != nil {
			return nil, fmt.Errorf("--ca-bundle: %w", err)
		}
		extra = append(extra, b...)
		if len(extra) > 0 && extra[len(extra)-1] != '\n' {
			extra = append(extra, '\n')
		}
	}
	pool, err := egress.UpstreamRoots(extra)
	if err != nil {
		return nil, fmt.Errorf("--ca-bundle %s: %w", cfg.CABundle, err)
	}
	t.roots = pool
	if cfg.Credentials != nil {
		if t.ca, err = egress.LoadAuthority(cfg.CacheDir); err != nil {
			return nil, err
		}
		extra = append(extra, t.ca.CertPEM()...)
	}
	var system []byte
	for _, p := range hostRoots {
		if system, err = os.ReadFile(p); err == nil {
			break
		}
	}
	dir := filepath.Join(cfg.CacheDir, "trust")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("writing the sessions' CA bundle: %w", err)
	}
	t.bundle, t.extra = filepath.Join(dir, "ca-bundle.pem"), filepath.Join(dir, "extra-ca.pem")
	if err := errors.Join(writeReadable(t.bundle, append(append(system, '\n'), extra...)), writeReadable(t.extra, extra)); err != nil {
		return nil, fmt.Errorf("writing the sessions' CA bundle: %w", err)
	}
	return t, nil
}

// writeReadable replaces path with data, readable by the containers' users.
func writeReadable(path string, data []byte) error {
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o644); err != nil { // whatever the umask
		return err
	}
	return os.Rename(tmp, path)
}

// mounts are the bundle files, read-only, where the containers read them.
func (t *trust) mounts() []engine.Mount {
	if t == nil {
		return nil
	}
	return []engine.Mount{
		{Source: t.bundle, Destination: TrustBundlePath, ReadOnly: true},
		{Source: t.bundle, Destination: systemBundlePath, ReadOnly: true},
		{Source: t.extra, Destination: TrustExtraPath, ReadOnly: true},
	}
}

// env points the common clients at the bundles, and, in a session of
// profile (not a setup), shows its credentials' placeholders.
func (t *trust) env(profile string, setup bool) map[string]string {
	if t == nil {
		return nil
	}
	env := map[string]string{"NODE_EXTRA_CA_CERTS": TrustExtraPath}
	for _, k := range []string{"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "PIP_CERT",
		"CARGO_HTTP_CAINFO", "AWS_CA_BUNDLE", "DENO_CERT"} {
		env[k] = TrustBundlePath
	}
	if t.creds != nil && !setup {
		for k, v := range t.creds.ForProfile(profile).ShownEnv() {
			env[k] = v
		}
	}
	return env
}

// injection is what the proxy of a session of profile injects; nil for
// nothing (it still verifies upstream hosts with the --ca-bundle then,
// through the containers' own TLS).
func (t *trust) injection(profile string) *egress.Injection {
	if t == nil || t.ca == nil {
		return nil
	}
	set := t.creds.ForProfile(profile)
	if len(set) == 0 {
		return nil
	}
	return &egress.Injection{Credentials: set, Authority: t.ca, Roots: t.roots}
}
