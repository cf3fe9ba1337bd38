package profiles

import (
	"strings"
	"testing"
)

// TestProfileRepo: a profile's repo is checked when the file is read,
// its error naming the file, line, profile and field; a profile that
// extends another starts with its repo unless it names its own.
func TestProfileRepo(t *testing.T) {
	t.Parallel()
	f, err := Parse("p.yaml", []byte(`profiles:
  base:
    repo: https://git.example.org/o/tool.git#v1
  child:
    extends: base
  other:
    extends: base
    repo: https://git.example.org/o/other
`), registriesLookup())
	if err != nil {
		t.Fatal(err)
	}
	if r := f.Profiles["child"].Repo; r == nil || r.String() != "https://git.example.org/o/tool.git#v1" || r.Dir != "tool" || f.Profiles["child"].RepoLine != 3 {
		t.Fatalf("child's repo %+v", r)
	}
	if r := f.Profiles["other"].Repo; r == nil || r.Dir != "other" || r.Ref != "" {
		t.Fatalf("other's repo %+v", r)
	}
	_, err = Parse("p.yaml", []byte("profiles:\n  a:\n    repo: \"https://git.example.org/o/r#$(id)\"\n  b:\n    repo: git@git.example.org:o/r\n"), registriesLookup())
	for _, want := range []string{`p.yaml:3: profile "a": repo: ref "$(id)"`, `p.yaml:5: profile "b": repo: "git@git.example.org:o/r": only https://`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v; want %q", err, want)
		}
	}
}
