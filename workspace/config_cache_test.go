package workspace

import (
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/egress"
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
