package workspace

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/wink-mcp/wink-mcp/egress"
)

// EgressCacheOn says whether the artefact cache is on: --egress-cache, or
// a profile's egress_cache.
func (c Config) EgressCacheOn() bool {
	if len(c.EgressCache) > 0 {
		return true
	}
	for _, p := range c.Profiles.All() {
		if len(p.EgressCache) > 0 {
			return true
		}
	}
	return false
}

// checkEgressCache reports what is wrong with the artefact cache's
// settings: a bad pattern, a pattern no allow pattern covers (the cache
// never opens a host the allowlist does not), a size or a directory.
func (c Config) checkEgressCache() []error {
	if !c.EgressCacheOn() {
		return nil
	}
	var errs []error
	cover := func(patterns, allow []string, where, allowers string) {
		cache, err := egress.ParseCachePolicy(patterns)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s%w", where, err))
			return
		}
		policy, err := egress.ParsePolicy(allow)
		if err != nil {
			return // Validate names it
		}
		if pat := egress.Uncovered(cache, policy); pat != "" {
			errs = append(errs, fmt.Errorf("%s--egress-cache %s: no %s allows all it names on the ports it caches "+
				"(443 unless it names one); add it to --egress, or drop it", where, pat, allowers))
		}
	}
	allow := slices.Clone(c.Egress)
	for _, p := range c.Profiles.All() {
		allow = append(allow, p.Egress.Session...)
	}
	cover(c.EgressCache, allow, "", "--egress pattern (nor a profile's egress.session)")
	for _, p := range c.Profiles.All() {
		if len(p.EgressCache) > 0 {
			cover(p.EgressCache, append(slices.Clone(c.Egress), p.Egress.Session...), fmt.Sprintf("profile %s: egress_cache: ", p.Name),
				"--egress pattern nor the profile's egress.session")
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

// artefactCaches opens the server's artefact cache and returns how the
// sessions of no profile ("") and of each profile with egress_cache use
// it; nil when the cache is off.
func (c Config) artefactCaches() (map[string]*egress.ArtefactCache, error) {
	if !c.EgressCacheOn() {
		return nil, nil
	}
	cache, err := egress.OpenCache(c.egressCacheDir(), c.EgressCacheBytes)
	if err != nil {
		return nil, err
	}
	uses := map[string]*egress.ArtefactCache{}
	add := func(profile string, patterns []string) error {
		if len(patterns) == 0 {
			return nil
		}
		hosts, err := egress.ParseCachePolicy(patterns) // checked by Validate
		if err != nil {
			return err
		}
		uses[profile] = &egress.ArtefactCache{Cache: cache, Hosts: hosts}
		return nil
	}
	if err := add("", c.EgressCache); err != nil {
		return nil, err
	}
	for _, p := range c.Profiles.All() {
		if err := add(p.Name, append(slices.Clone(c.EgressCache), p.EgressCache...)); err != nil {
			return nil, err
		}
	}
	if len(uses) == 0 {
		return nil, nil
	}
	return uses, nil
}
