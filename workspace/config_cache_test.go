package workspace

import (
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/egress"
	"github.com/wink-mcp/wink-mcp/profiles"
)

// A cache pattern outside the allowlist, a bad one, a small size and a
// relative directory are each refused at start, named.
func TestConfigChecksTheEgressCache(t *testing.T) {
	base := DefaultConfig()
	base.CacheDir = t.TempDir()
	base.Egress = []string{"proxy.example", "*.registry.example"}
	for name, c := range map[string]struct {
		set  func(*Config)
		want string
	}{
		"covered":       {func(c *Config) { c.EgressCache = []string{"proxy.example", "npm.registry.example"} }, ""},
		"outside":       {func(c *Config) { c.EgressCache = []string{"proxy.example", "sum.example"} }, "--egress-cache sum.example: no --egress pattern"},
		"another port":  {func(c *Config) { c.EgressCache = []string{"proxy.example:8443"} }, "--egress-cache proxy.example:8443"},
		"malformed":     {func(c *Config) { c.EgressCache = []string{"a b"} }, `--egress-cache "a b"`},
		"small":         {func(c *Config) { c.EgressCache = []string{"proxy.example"}; c.EgressCacheBytes = 1 << 20 }, "--egress-cache-size 1048576 is below"},
		"relative":      {func(c *Config) { c.EgressCache = []string{"proxy.example"}; c.EgressCacheDir = "cache" }, `--egress-cache-dir "cache"`},
		"off, any size": {func(c *Config) { c.EgressCacheBytes = 0 }, ""},
	} {
		cfg := base
		c.set(&cfg)
		err := cfg.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	if base.EgressCacheBytes != egress.DefaultCacheBytes {
		t.Errorf("default size %d", base.EgressCacheBytes)
	}
}

// A profile's egress_cache must be inside the server's --egress or that
// profile's own egress.session, and turns the cache on by itself.
func TestConfigChecksAProfilesEgressCache(t *testing.T) {
	file, err := profiles.Parse("p.yaml", []byte(`profiles:
  web:
    egress: {session: [registry.example]}
    egress_cache: [registry.example]
  other:
    egress_cache: [registry.example]
`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
	c.CacheDir = t.TempDir()
	c.Profiles = file
	if !c.EgressCacheOn() {
		t.Fatal("a profile's egress_cache does not turn the cache on")
	}
	err = c.Validate()
	if err == nil || !strings.Contains(err.Error(), "profile other: egress_cache: --egress-cache registry.example") || strings.Contains(err.Error(), "profile web") {
		t.Fatalf("%v", err)
	}
	caches, err := c.artefactCaches()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := caches["web"].Hosts.Match("registry.example", 443); !ok || caches[""] != nil {
		t.Fatalf("the web profile's sessions do not cache their host, or sessions of no profile do: %v", caches)
	}
}
