package profiles

import (
	"slices"
	"strings"
	"testing"
)

// A profile's egress_cache is a list of host patterns, checked when the
// file is read, and a profile that extends another adds to its parent's.
func TestProfileEgressCache(t *testing.T) {
	none := func(string) (string, bool) { return "", false }
	f, err := Parse("p.yaml", []byte("profiles:\n  base:\n    egress_cache: [proxy.example]\n  web:\n    extends: base\n    egress_cache: ['*.npm.example:8443']\n"), none)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Profiles["web"].EgressCache; !slices.Equal(got, []string{"proxy.example", "*.npm.example:8443"}) {
		t.Errorf("web's egress_cache %v", got)
	}
	for doc, want := range map[string]string{
		"profiles:\n  p:\n    egress_cache: [a b]\n":  `egress_cache`,
		"profiles:\n  p:\n    egress_cache: proxy\n":  "must be a list",
		"profiles:\n  p:\n    egress_cache: ['*.']\n": "egress_cache",
	} {
		if _, err := Parse("p.yaml", []byte(doc), none); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "p") {
			t.Errorf("%q: %v, want %q", doc, err, want)
		}
	}
}
