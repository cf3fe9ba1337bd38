package profiles

import (
	"slices"
	"strings"
	"testing"
)

// registriesLookup gives the built-in profiles' variables, example
// values, except those named in missing.
func registriesLookup(missing ...string) func(string) (string, bool) {
	vals := map[string]string{
		"WINK_APT_MIRROR_HOST":   "deb.example.org",
		"WINK_GO_PROXY":          "https://goproxy.example.org",
		"WINK_GO_PROXY_HOST":     "goproxy.example.org",
		"WINK_NPM_REGISTRY":      "https://npm.example.org",
		"WINK_NPM_REGISTRY_HOST": "npm.example.org",
	}
	return func(name string) (string, bool) {
		if slices.Contains(missing, name) {
			return "", false
		}
		v, ok := vals[name]
		return v, ok
	}
}

func TestBuiltinProfiles(t *testing.T) {
	t.Parallel()
	f, unavailable := Builtin(registriesLookup())
	if len(unavailable) > 0 {
		t.Fatalf("unavailable: %+v", unavailable)
	}
	if got := f.Names(); !slices.Equal(got, []string{"general", "go", "node", "python", "rust"}) {
		t.Fatalf("names %v", got)
	}
	for _, p := range f.All() {
		if !p.IsBuiltin() || p.Description == "" {
			t.Errorf("%s: builtin %v, description %q", p.Name, p.IsBuiltin(), p.Description)
		}
		if p.Name != "general" && (len(p.Setup) == 0 || len(p.Egress.Setup) != 1 || len(p.Egress.Session) != 0) {
			t.Errorf("%s: setup %d commands, egress %+v: want a setup reaching one registry and no session egress", p.Name, len(p.Setup), p.Egress)
		}
	}
	if got := f.Profiles["go"].Egress.Setup; !slices.Equal(got, []string{"goproxy.example.org"}) {
		t.Errorf("go's setup egress %v", got)
	}
	if got := f.Profiles["go"].Env["GOPROXY"]; got != "https://goproxy.example.org" {
		t.Errorf("go's GOPROXY %q", got)
	}
	if !strings.Contains(f.Profiles["node"].Setup[0], "https://npm.example.org/npm/-/npm-10.") ||
		!strings.Contains(f.Profiles["node"].SetupSource[0], "${WINK_NPM_REGISTRY}") {
		t.Errorf("node's setup does not download npm 10 from the registry given")
	}
	// The key is stable and names the built-in identity, not a path.
	if a, b := f.Profiles["go"].ImageKey("sha256:1"), f.Profiles["go"].ImageKey("sha256:1"); a != b || f.Profiles["go"].FileID != BuiltinFileID {
		t.Errorf("go's key %s %s, file %q", a, b, f.Profiles["go"].FileID)
	}
}

// TestBuiltinProfileWithoutItsRegistry: a built-in whose registry is
// not known is left out, and the reason names the variable to set; the
// others stay.
func TestBuiltinProfileWithoutItsRegistry(t *testing.T) {
	t.Parallel()
	f, unavailable := Builtin(registriesLookup("WINK_GO_PROXY", "WINK_GO_PROXY_HOST"))
	if len(unavailable) != 1 || unavailable[0].Name != "go" || !strings.Contains(unavailable[0].Reason, "WINK_GO_PROXY") {
		t.Fatalf("unavailable %+v, want go naming WINK_GO_PROXY", unavailable)
	}
	if f.Profiles["go"] != nil || f.Profiles["node"] == nil || f.Profiles["general"] == nil {
		t.Fatalf("profiles %v", f.Names())
	}
}

// TestAFileOverridesABuiltin: a file's profile of a built-in's name
// replaces it; the file's default and identity stay; a file's images
// and the built-ins' are both its own to prune, another file's not.
func TestAFileOverridesABuiltin(t *testing.T) {
	t.Parallel()
	builtin, _ := Builtin(registriesLookup())
	user, err := Parse("/p/profiles.yaml", []byte("default: mine\nprofiles:\n  go:\n    description: our go\n  mine:\n    image: x\n"), registriesLookup())
	if err != nil {
		t.Fatal(err)
	}
	f := WithBuiltins(builtin, user)
	if got := f.Names(); !slices.Equal(got, []string{"general", "go", "mine", "node", "python", "rust"}) {
		t.Fatalf("names %v", got)
	}
	if f.Profiles["go"].Description != "our go" || f.Profiles["go"].IsBuiltin() || !f.Profiles["node"].IsBuiltin() {
		t.Fatalf("go %+v", f.Profiles["go"])
	}
	if f.Default != "mine" || f.ID != user.ID || f.Path != user.Path {
		t.Fatalf("file %q %q %q", f.Default, f.ID, f.Path)
	}
	if !f.OwnsImagesOf(user.ID) || !f.OwnsImagesOf(BuiltinFileID) || f.OwnsImagesOf("/other/profiles.yaml") {
		t.Fatal("OwnsImagesOf")
	}
	if got := WithBuiltins(builtin, nil); got != builtin {
		t.Fatal("without a file, the built-ins alone")
	}
}
