package egress

import (
	"strings"
	"testing"
)

// A cache pattern must be inside the allowlist: a host it names that no
// allow pattern reaches is named at start.
func TestUncoveredCachePatterns(t *testing.T) {
	allow, err := ParsePolicy([]string{"proxy.golang.org", "*.npmjs.org", "deb.example:8443"})
	if err != nil {
		t.Fatal(err)
	}
	for pattern, want := range map[string]bool{
		"proxy.golang.org":      true,
		"registry.npmjs.org":    true,
		"*.npmjs.org":           true,
		"*.a.npmjs.org":         true,
		"npmjs.org":             false,
		"*.golang.org":          false,
		"deb.example:8443":      true,
		"deb.example":           false, // 443 is not allowed there
		"proxy.golang.org:8443": false,
		"sum.golang.org":        false,
	} {
		cache, err := ParseCachePolicy([]string{pattern})
		if err != nil {
			t.Fatal(err)
		}
		if got := Uncovered(cache, allow); (got == "") != want {
			t.Errorf("%s: uncovered %q, want covered %v", pattern, got, want)
		}
	}
	if _, err := ParseCachePolicy([]string{"bad host"}); err == nil || !strings.HasPrefix(err.Error(), "--egress-cache ") {
		t.Errorf("a bad pattern: %v", err)
	}
}
