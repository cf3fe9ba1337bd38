package main

import (
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/workspace"
)

// TestRepoNeedsItsHostInEgress: --repo opens nothing by itself; a bad
// spec is refused naming the flag.
func TestRepoNeedsItsHostInEgress(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		spec   string
		egress []string
		says   string
	}{
		{"https://git.example.org/o/r", nil, "add --egress git.example.org"},
		{"https://git.example.org/o/r", []string{"other.example.org"}, "no --egress pattern allows"},
		{"https://git.example.org:8443/o/r", []string{"git.example.org"}, "add --egress git.example.org:8443"},
		{"https://git.example.org/o/r#$(id)", []string{"git.example.org"}, "--repo: ref"},
		{"git@git.example.org:o/r", []string{"git.example.org"}, "--repo: "},
		{"https://git.example.org/o/r#v1", []string{"git.example.org"}, ""},
		{"https://git.example.org:8443/o/r", []string{"git.example.org:8443"}, ""},
		{"https://git.example.org/o/r", []string{"*.example.org"}, ""},
	} {
		w := workspace.Config{Egress: tt.egress}
		err := resolveRepo(&w, tt.spec)
		switch {
		case tt.says == "" && (err != nil || w.Repo == nil || w.Repo.String() != tt.spec):
			t.Errorf("--repo %s --egress %v: %v, repo %+v", tt.spec, tt.egress, err, w.Repo)
		case tt.says != "" && (err == nil || !strings.Contains(err.Error(), tt.says) || w.Repo != nil):
			t.Errorf("--repo %s --egress %v: %v; want an error saying %q", tt.spec, tt.egress, err, tt.says)
		}
	}
}
