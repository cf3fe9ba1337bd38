package workspace

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/egress"
	"github.com/wink-mcp/wink-mcp/profiles"
)

// Without the flags nothing changes; with them the bundle files are
// readable by the containers' users, the placeholders are set only in a
// profile's sessions that get the entry, never in a setup, and the proxy
// of a session without a credential intercepts nothing.
func TestTrust(t *testing.T) {
	cfg := DefaultConfig()
	cfg.CacheDir = t.TempDir()
	if tr, err := newTrust(&cfg); tr != nil || err != nil || tr.env("", false) != nil || tr.mounts("") != nil || tr.injection("") != nil {
		t.Fatalf("without the flags: %v %v", tr, err)
	}
	cs, err := egress.ParseCredentials("c.yaml", []byte("credentials:\n  api: {hosts: [api.example.com], bearer: {env: T}, placeholder: API_TOKEN, profiles: [p]}\n"),
		func(string) (string, bool) { return "s3cr3t-value-xyz", true })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Credentials = cs
	tr, err := newTrust(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range tr.mounts("p") {
		info, err := os.Stat(m.Source)
		if err != nil || info.Mode().Perm() != 0o644 || !m.ReadOnly {
			t.Fatalf("%s: %v %v", m.Destination, info, err)
		}
		data, _ := os.ReadFile(m.Source)
		if strings.Contains(string(data), "PRIVATE") || strings.Contains(string(data), "s3cr3t-value-xyz") {
			t.Fatalf("%s holds a key or the value", m.Source)
		}
	}
	if env := tr.env("p", false); env["API_TOKEN"] != egress.Placeholder || env["SSL_CERT_FILE"] != TrustBundlePath || env["NODE_EXTRA_CA_CERTS"] != TrustExtraPath {
		t.Fatalf("a session of p: %v", env)
	}
	if _, ok := tr.env("p", true)["API_TOKEN"]; ok {
		t.Fatal("a setup got the placeholder")
	}
	if _, ok := tr.env("q", false)["API_TOKEN"]; ok {
		t.Fatal("another profile's session got the placeholder")
	}
	if tr.injection("q") != nil || tr.injection("p") == nil {
		t.Fatal("the injection does not follow the profiles")
	}
	if tr.mounts("p")[0].Source != tr.mounts("q")[0].Source {
		t.Fatal("profiles without a ca_bundle of their own got different bundles")
	}
}

// --credentials and --ca-bundle are refused where the containers could not
// mount the bundle, and credentials without any egress proxy.
func TestTrustConfigRefusals(t *testing.T) {
	cs, err := egress.ParseCredentials("c.yaml", []byte("credentials:\n  api: {hosts: [api.example.com], bearer: {env: T}, profiles: [nosuch]}\n"),
		func(string) (string, bool) { return "v", true })
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"remote without a shared cache", func(c *Config) { c.CABundle, c.FilesOnEngineHost = "/b.pem", true }, "need the engine's host to share this machine's files"},
		{"credentials without egress", func(c *Config) { c.Credentials = cs }, "the sessions have no egress proxy"},
		{"an unknown profile", func(c *Config) { c.Credentials, c.Egress = cs, []string{"api.example.com"} }, "api.profiles names nosuch, which no profiles file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.mutate(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want %q", err, tc.want)
			}
		})
	}
	c := DefaultConfig()
	c.CABundle, c.FilesOnEngineHost, c.SharedPaths = "/b.pem", true, []string{c.CacheDir}
	c.Egress = []string{"api.example.com"}
	if err := c.Validate(); err != nil {
		t.Fatalf("a shared cache directory: %v", err)
	}
}

// A profile's ca_bundle gives its sessions' proxies a trust of their own
// (the artefact cache keeps its entries apart); profiles with the same
// bundle share one, and sessions without one have the server's.
func TestTrustNamesEachProfilesExtraRoots(t *testing.T) {
	dir := t.TempDir()
	pemA, pemB := dir+"/a.pem", dir+"/b.pem"
	for path, seed := range map[string]string{pemA: "a", pemB: "b"} {
		if err := os.WriteFile(path, testCAPEM(t, seed), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := DefaultConfig()
	cfg.CacheDir = t.TempDir()
	cfg.EgressCache = []string{"cache.example.com"}
	cfg.Profiles = &profiles.File{Profiles: map[string]*profiles.Profile{
		"a": {Name: "a", CABundle: pemA}, "a2": {Name: "a2", CABundle: pemA}, "b": {Name: "b", CABundle: pemB}, "plain": {Name: "plain"}}}
	tr, err := newTrust(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	trust := func(p string) string { return tr.injection(p).Trust }
	if trust("") != "" || trust("plain") != "" {
		t.Errorf("sessions without a ca_bundle: %q, %q", trust(""), trust("plain"))
	}
	if trust("a") == "" || trust("a") != trust("a2") || trust("a") == trust("b") {
		t.Errorf("a %q, a2 %q, b %q", trust("a"), trust("a2"), trust("b"))
	}
}

// testCAPEM returns a self-signed CA certificate in PEM, named after seed.
func testCAPEM(t *testing.T, seed string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA " + seed},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// Servers starting at once on one cache directory write the same trust
// files: each write replaces the file whole, none fails on another's
// temporary file, and none is left.
func TestWriteReadableFromManyWritersAtOnce(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ca-bundle.pem")
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		wg.Go(func() { errs <- writeReadable(path, []byte(strings.Repeat(fmt.Sprint(i%10), 4096))) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil || len(b) != 4096 || strings.Count(string(b), string(b[0])) != 4096 {
		t.Errorf("the file after 32 writers: %d bytes, %v", len(b), err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files left, want the bundle alone", len(entries))
	}
}
