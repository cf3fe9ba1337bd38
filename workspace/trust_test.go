package workspace

import (
	"os"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/egress"
)

// Without the flags nothing changes; with them the bundle files are
// readable by the containers' users, the placeholders are set only in a
// profile's sessions that get the entry, never in a setup, and the proxy
// of a session without a credential intercepts nothing.
func TestTrust(t *testing.T) {
	cfg := DefaultConfig()
	cfg.CacheDir = t.TempDir()
	if tr, err := newTrust(&cfg); tr != nil || err != nil || tr.env("", false) != nil || tr.mounts() != nil || tr.injection("") != nil {
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
	for _, m := range tr.mounts() {
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
}
