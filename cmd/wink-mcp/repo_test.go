package main

import (
	"io"
	"os"
	"path/filepath"
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
		{"https://git.example.org/o/r", nil, "add git.example.org with --egress"},
		{"https://git.example.org/o/r", []string{"other.example.org"}, "no egress pattern allows"},
		{"https://git.example.org:8443/o/r", []string{"git.example.org"}, "add git.example.org:8443 with --egress"},
		{"https://git.example.org/o/r#$(id)", []string{"git.example.org"}, "--repo: ref"},
		{"git@git.example.org:o/r", []string{"git.example.org"}, "--repo: \"git@git.example.org:o/r\": only https://"},
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

// TestProfileRepoNeedsItsHostInEgress: a profile's repo host must be in
// --egress or the profile's own egress.session; the error names the
// file, line, profile and field.
func TestProfileRepoNeedsItsHostInEgress(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "profiles.yaml")
	must(t, os.WriteFile(file, []byte(`profiles:
  open:
    repo: https://git.example.org/o/r
    egress:
      session: [git.example.org]
  closed:
    repo: https://other.example.org/o/r
`), 0o644))
	_, _, err := parseServeFlags([]string{"--profiles", file, "--no-builtin-profiles"}, func(string) (string, bool) { return "", false }, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `profiles.yaml:7: profile "closed": repo: the clone reaches other.example.org`) || strings.Contains(err.Error(), `"open"`) {
		t.Fatalf("err %v", err)
	}
}
