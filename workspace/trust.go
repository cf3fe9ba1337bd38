package workspace

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/wink-mcp/wink-mcp/egress"
	"github.com/wink-mcp/wink-mcp/engine"
)

// Where a session's container finds the certificates it trusts.
const (
	// TrustBundlePath holds the public roots of this machine, the
	// --ca-bundle (and the profile's ca_bundle) and wink-mcp's egress CA;
	// it is also mounted over the system bundle Debian-family images read.
	TrustBundlePath = "/etc/wink-mcp/ca-bundle.pem"
	// TrustExtraPath holds only the CA bundles and the egress CA, for
	// clients that add to their own roots (NODE_EXTRA_CA_CERTS).
	TrustExtraPath = "/etc/wink-mcp/extra-ca.pem"
	// systemBundlePath is the system bundle of Debian, Ubuntu and Alpine.
	systemBundlePath = "/etc/ssl/certs/ca-certificates.crt"
)

// hostRoots are where this machine keeps its public roots, by family.
var hostRoots = []string{"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"}

// trust is what the containers trust besides their image (--ca-bundle, a
// profile's ca_bundle and the egress CA), and what the proxy injects
// (--credentials). A nil trust changes nothing.
type trust struct {
	creds *egress.Credentials
	ca    *egress.Authority // nil without credentials and artefact cache
	// artefacts is the artefact cache every session's proxy shares, with
	// the hosts of sessions of no profile ("") and of each profile with
	// egress_cache; nil when the cache is off.
	artefacts map[string]*egress.ArtefactCache
	// base are the files of sessions without a profile's ca_bundle, and
	// byProfile those of each profile with one.
	base      *trustFiles
	byProfile map[string]*trustFiles
}

// trustFiles are the bundles of this machine mounted at TrustBundlePath
// and TrustExtraPath, and the roots the proxy verifies upstream hosts with.
type trustFiles struct {
	bundle, extra string
	roots         *x509.CertPool
	// trust names the roots beyond the server's (egress.Injection.Trust).
	trust string
}

// newTrust makes the CA (with credentials) and writes the files the
// containers mount, under the cache directory; nil without any of them.
func newTrust(cfg *Config) (*trust, error) {
	profileBundles := map[string]string{}
	if cfg.Profiles != nil {
		for name, p := range cfg.Profiles.Profiles {
			if p.CABundle != "" {
				profileBundles[name] = p.CABundle
			}
		}
	}
	if cfg.Credentials == nil && cfg.CABundle == "" && len(profileBundles) == 0 && !cfg.EgressCacheOn() {
		return nil, nil
	}
	t := &trust{creds: cfg.Credentials, byProfile: map[string]*trustFiles{}}
	var err error
	if t.artefacts, err = cfg.artefactCaches(); err != nil {
		return nil, err
	}
	var extra []byte
	if cfg.CABundle != "" {
		b, err := readBundle(cfg.CABundle)
		if err != nil {
			return nil, fmt.Errorf("--ca-bundle %s: %w", cfg.CABundle, err)
		}
		extra = b
	}
	var caPEM []byte
	if cfg.Credentials != nil || t.artefacts != nil {
		var err error
		if t.ca, err = egress.LoadAuthority(cfg.CacheDir); err != nil {
			return nil, err
		}
		caPEM = t.ca.CertPEM()
	}
	var system []byte
	for _, p := range hostRoots {
		if system, err = os.ReadFile(p); err == nil {
			break
		}
	}
	dir := filepath.Join(cfg.CacheDir, "trust")
	if t.base, err = writeTrustFiles(filepath.Join(dir, "server"), system, extra, caPEM); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(profileBundles))
	for name := range profileBundles {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		b, err := readBundle(profileBundles[name])
		if err != nil {
			return nil, fmt.Errorf("profile %s: ca_bundle %s: %w", name, profileBundles[name], err)
		}
		if t.byProfile[name], err = writeTrustFiles(filepath.Join(dir, "profile-"+name), system, slices.Concat(extra, b), caPEM); err != nil {
			return nil, err
		}
		sum := sha256.Sum256(b)
		t.byProfile[name].trust = hex.EncodeToString(sum[:])
	}
	return t, nil
}

// readBundle reads a PEM file that must hold a certificate, ending it
// with a line break.
func readBundle(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if !x509.NewCertPool().AppendCertsFromPEM(b) {
		return nil, errors.New("no PEM certificate in it")
	}
	if b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	return b, nil
}

// writeTrustFiles writes into dir the bundle (system roots, extra, the
// CA) and the extra one (extra and the CA).
func writeTrustFiles(dir string, system, extra, caPEM []byte) (*trustFiles, error) {
	roots, err := egress.UpstreamRoots(extra)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("writing the sessions' CA bundle: %w", err)
	}
	f := &trustFiles{bundle: filepath.Join(dir, "ca-bundle.pem"), extra: filepath.Join(dir, "extra-ca.pem"), roots: roots}
	extras := slices.Concat(extra, caPEM)
	if err := errors.Join(writeReadable(f.bundle, slices.Concat(system, []byte("\n"), extras)), writeReadable(f.extra, extras)); err != nil {
		return nil, fmt.Errorf("writing the sessions' CA bundle: %w", err)
	}
	return f, nil
}

// writeReadable replaces path with data, readable by the containers'
// users. Its temporary file is its own, so that servers starting at once
// on one cache directory (a desktop client's conversations, parallel
// `profiles build`s) never take each other's.
func writeReadable(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".new-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	if err := errors.Join(werr, f.Close(), os.Chmod(tmp, 0o644)); err != nil { // 0644 whatever the umask
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// files are the trust files of a session or setup of profile.
func (t *trust) files(profile string) *trustFiles {
	if f := t.byProfile[profile]; f != nil {
		return f
	}
	return t.base
}

// mounts are the bundle files of profile, read-only, where the containers
// read them.
func (t *trust) mounts(profile string) []engine.Mount {
	if t == nil {
		return nil
	}
	f := t.files(profile)
	return []engine.Mount{
		{Source: f.bundle, Destination: TrustBundlePath, ReadOnly: true},
		{Source: f.bundle, Destination: systemBundlePath, ReadOnly: true},
		{Source: f.extra, Destination: TrustExtraPath, ReadOnly: true},
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

// injection is what the proxy of a session of profile injects, and the
// artefact cache it shares; nil for nothing.
func (t *trust) injection(profile string) *egress.Injection {
	if t == nil || t.ca == nil {
		return nil
	}
	set := t.creds.ForProfile(profile)
	artefacts := t.artefacts[profile]
	if artefacts == nil {
		artefacts = t.artefacts[""]
	}
	if len(set) == 0 && artefacts == nil {
		return nil
	}
	f := t.files(profile)
	return &egress.Injection{Credentials: set, Authority: t.ca, Roots: f.roots, Trust: f.trust, Artefacts: artefacts}
}
