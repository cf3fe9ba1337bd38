package egress

import (
	"strings"
	"testing"
)

// A cache pattern must be inside the allowlist: a host it names that no
// allow pattern reaches is named at start.
func TestUncoveredCachePatterns(t *testing.T) {
	allow, err := ParsePolicy([]string{"goproxy.example", "*.npm.example", "deb.example:8443"})
	if err != nil {
		t.Fatal(err)
	}
	for pattern, want := range map[string]bool{
		"goproxy.example":      true,
		"registry.npm.example": true,
		"*.npm.example":        true,
		"*.a.npm.example":      true,
		"npm.example":          false,
		"*.goproxy.example":    false,
		"deb.example:8443":     true,
		"deb.example":          false, // 443 is not allowed there
		"goproxy.example:8443": false,
		"sum.goproxy.example":  false,
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
