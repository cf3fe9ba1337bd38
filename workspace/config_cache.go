package workspace

import (
	"fmt"
	"path/filepath"

	"github.com/wink-mcp/wink-mcp/egress"
)

// checkEgressCache reports what is wrong with the artefact cache's
// settings: a bad pattern, a pattern no allow pattern covers (the cache
// never opens a host the allowlist does not), a size or a directory.
func (c Config) checkEgressCache() []error {
	if len(c.EgressCache) == 0 {
		return nil
	}
	var errs []error
	cache, err := egress.ParseCachePolicy(c.EgressCache)
	if err != nil {
		return []error{err}
	}
	allow := c.Egress
	for _, p := range c.Profiles.All() {
		allow = append(allow, p.Egress.Session...)
	}
	if policy, err := egress.ParsePolicy(allow); err == nil {
		if pat := egress.Uncovered(cache, policy); pat != "" {
			errs = append(errs, fmt.Errorf("--egress-cache %s: no --egress pattern (nor a profile's egress.session) allows all it names on "+
				"the ports it caches (443 unless it names one); add --egress %s, or drop it", pat, pat))
		}
	}
	if c.EgressCacheBytes < egress.MinCacheBytes {
		errs = append(errs, fmt.Errorf("--egress-cache-size %d is below the minimum of %d (16 MiB)", c.EgressCacheBytes, int64(egress.MinCacheBytes)))
	}
	if c.EgressCacheDir != "" && !filepath.IsAbs(c.EgressCacheDir) {
		errs = append(errs, fmt.Errorf("--egress-cache-dir %q must be an absolute path", c.EgressCacheDir))
	}
	return errs
}

// egressCacheDir is where the artefact cache lives.
func (c Config) egressCacheDir() string {
	if c.EgressCacheDir != "" {
		return c.EgressCacheDir
	}
	return filepath.Join(c.CacheDir, egress.CacheDirName)
}
