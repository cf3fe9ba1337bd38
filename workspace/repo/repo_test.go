package repo

import (
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec          string
		url, ref, dir string
		host          string
	}{
		{spec: "https://git.example.org/owner/tool.git", url: "https://git.example.org/owner/tool.git", dir: "tool", host: "git.example.org"},
		{spec: "https://git.example.org/owner/tool#v1.2.3", url: "https://git.example.org/owner/tool", ref: "v1.2.3", dir: "tool", host: "git.example.org"},
		{spec: "https://git.example.org:8443/a/b/c-d_e.f#feature/x", url: "https://git.example.org:8443/a/b/c-d_e.f", ref: "feature/x", dir: "c-d_e.f", host: "git.example.org:8443"},
		{spec: "https://git.example.org/o/r#0123456789abcdef0123456789abcdef01234567", url: "https://git.example.org/o/r", ref: "0123456789abcdef0123456789abcdef01234567", dir: "r", host: "git.example.org"},
	}
	for _, tt := range tests {
		r, err := Parse(tt.spec)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.spec, err)
			continue
		}
		if r.URL != tt.url || r.Ref != tt.ref || r.Dir != tt.dir || r.Host != tt.host || r.String() != tt.spec {
			t.Errorf("Parse(%q) = %+v", tt.spec, r)
		}
	}
}

// TestParseRefuses: the hostile and the careless specs are refused with
// a message naming what was wrong and what to do; none reaches a clone.
func TestParseRefuses(t *testing.T) {
	t.Parallel()
	long := "https://git.example.org/" + strings.Repeat("a", MaxURLBytes)
	for _, tt := range []struct{ spec, says string }{
		{"", "no URL"},
		{"#main", "no URL"},
		{long, "at most 2048"},
		{"http://git.example.org/o/r", "only https://"},
		{"ssh://git@git.example.org/o/r", "only https://"},
		{"ext::sh -c touch% /tmp/pwned", "space"},
		{"ext::sh", "only https://"},
		{"file:///etc", "only https://"},
		{"/srv/repo", "only https://"},
		{"git.example.org/o/r", "only https://"},
		{"https://user:secret@git.example.org/o/r", "--credentials"},
		{"https://token@git.example.org/o/r", "--credentials"},
		{"https:///o/r", "no host"},
		{"https://git.example.org/o/r?x=1", "query"},
		{"https://git.example.org/", "repository name"},
		{"https://git.example.org/o/..", "repository name"},
		{"https://git.example.org/o/r%20x", "repository name"},
		{"https://git.example.org/o/r#--upload-pack=touch", "letters, digits"},
		{"https://git.example.org/o/r#--upload-pack", "leading '-'"},
		{"https://git.example.org/o/r#-b", "leading '-'"},
		{"https://git.example.org/o/r#a..b", "'..'"},
		{"https://git.example.org/o/r#main;rm", "letters, digits"},
		{"https://git.example.org/o/r#$(id)", "letters, digits"},
		{"https://git.example.org/o/r#`id`", "letters, digits"},
		{"https://git.example.org/o/r#a b", "space"},
		{"https://git.example.org/o/r#x\n", "control"},
		{"https://git.example.org/o/r#main.lock", ".lock"},
		{"https://git.example.org/o/r#" + strings.Repeat("a", MaxRefBytes+1), "at most 255"},
		{"https://git.example.org/o/r#héllo", "non-ASCII"},
	} {
		_, err := Parse(tt.spec)
		if err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("Parse(%q) = %v; want an error saying %q", tt.spec, err, tt.says)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("Parse(%q) repeats the password: %v", tt.spec, err)
		}
	}
}

// TestSteps: the URL, folder and ref are arguments of their own, after
// "--" where git would take an option, and git's transports other than
// https are off.
func TestSteps(t *testing.T) {
	t.Parallel()
	r, err := Parse("https://git.example.org/o/tool.git#v2")
	if err != nil {
		t.Fatal(err)
	}
	steps := r.Steps()
	want := [][]string{
		{"git", "-c", "protocol.allow=never", "-c", "protocol.https.allow=always", "clone", "--quiet", "--no-checkout", "--", "https://git.example.org/o/tool.git", "tool"},
		{"git", "-C", "tool", "checkout", "--quiet", "v2", "--"},
	}
	if len(steps) != len(want) {
		t.Fatalf("steps %q", steps)
	}
	for i := range want {
		if !slices.Equal(steps[i], want[i]) {
			t.Errorf("step %d: %q, want %q", i, steps[i], want[i])
		}
	}
	r.Ref = ""
	if got := r.Steps()[1]; !slices.Equal(got, []string{"git", "-C", "tool", "checkout", "--quiet", "HEAD", "--"}) {
		t.Errorf("without a ref: %q", got)
	}
}
