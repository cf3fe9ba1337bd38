package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/profiles"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// TestRegistryLookup: the server's variable wins over the machine's
// configuration; a _HOST is its URL's host; none found is unset.
func TestRegistryLookup(t *testing.T) {
	t.Parallel()
	env := map[string]string{"WINK_NPM_REGISTRY": "https://npm.example.org/"}
	machine := map[string]string{"WINK_GO_PROXY": "https://goproxy.example.org:8443/", "WINK_NPM_REGISTRY": "https://machine.example.org"}
	lookup := registryLookup(func(n string) (string, bool) { v, ok := env[n]; return v, ok }, func(n string) string { return machine[n] })
	for name, want := range map[string]string{
		"WINK_NPM_REGISTRY":      "https://npm.example.org",
		"WINK_NPM_REGISTRY_HOST": "npm.example.org",
		"WINK_GO_PROXY":          "https://goproxy.example.org:8443",
		"WINK_GO_PROXY_HOST":     "goproxy.example.org",
	} {
		if got, ok := lookup(name); !ok || got != want {
			t.Errorf("%s = %q %v, want %q", name, got, ok, want)
		}
	}
	if got, ok := lookup("WINK_APT_MIRROR_HOST"); ok {
		t.Errorf("an unknown mirror gave %q", got)
	}
}

// TestDetectProfile: ask records the finding, auto also makes it the
// sessions' profile, off and an explicit --profile look at nothing, and
// a bad mode names the flag.
func TestDetectProfile(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "proj")
	must(t, os.MkdirAll(dir, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "Cargo.toml"), []byte("[package]\n"), 0o644))
	empty := t.TempDir()
	builtin, _ := profiles.Builtin(func(string) (string, bool) { return "x.example.org", true })
	config := func(profile string) *workspace.Config {
		return &workspace.Config{Profiles: builtin, Profile: profile,
			Mounts: []workspace.Mount{{HostPath: empty}, {HostPath: dir}}}
	}
	w := config("")
	must(t, detectProfile(w, detectAsk))
	if w.Profile != "" || w.Detection == nil || w.Detection.Finding.Profile != "rust" || w.Detection.Started || w.Detection.Folder != "/workspace/proj" {
		t.Fatalf("ask: profile %q, detection %+v", w.Profile, w.Detection)
	}
	w = config("")
	must(t, detectProfile(w, detectAuto))
	if w.Profile != "rust" || !w.Detection.Started {
		t.Fatalf("auto: profile %q, detection %+v", w.Profile, w.Detection)
	}
	w = config("python")
	must(t, detectProfile(w, detectAuto))
	if w.Profile != "python" || w.Detection != nil {
		t.Fatalf("--profile python: profile %q, detection %+v", w.Profile, w.Detection)
	}
	w = config("")
	must(t, detectProfile(w, detectOff))
	if w.Detection != nil {
		t.Fatalf("off looked: %+v", w.Detection)
	}
	if err := detectProfile(config(""), "yes"); err == nil || !strings.Contains(err.Error(), "--detect") {
		t.Fatalf("a bad mode: %v", err)
	}
	w = config("")
	w.Profiles = &profiles.File{Profiles: map[string]*profiles.Profile{"python": builtin.Profiles["python"]}}
	must(t, detectProfile(w, detectAuto))
	if w.Profile != "" || w.Detection.Finding.Found() || !strings.Contains(w.Detection.Finding.Reason, "no rust profile is offered") {
		t.Fatalf("a profile not offered: %q %+v", w.Profile, w.Detection)
	}
}

// A folder's own container comes before its language markers: a
// Dockerfile beside a go.mod makes the "project" profile, offered with
// ask and started with auto; a devcontainer.json the sandbox refuses is
// passed over for the markers.
func TestDetectProfileFindsTheProjectsOwnContainerFirst(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "svc")
	must(t, os.MkdirAll(dir, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/svc\n\ngo 1.25\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM localhost/wink-workspace:bookworm\n"), 0o644))
	config := func() *workspace.Config {
		builtin, _ := profiles.Builtin(func(string) (string, bool) { return "x.example.org", true })
		return &workspace.Config{Profiles: builtin, Mounts: []workspace.Mount{{HostPath: dir}}}
	}
	w := config()
	must(t, detectProfile(w, detectAsk))
	if w.Profile != "" || w.Detection == nil || w.Detection.Finding.Profile != "project" || w.Detection.Finding.Marker != "Dockerfile" || w.Profiles.Profiles["project"] == nil {
		t.Fatalf("ask: profile %q, detection %+v", w.Profile, w.Detection)
	}
	w = config()
	must(t, detectProfile(w, detectAuto))
	if w.Profile != "project" || !w.Detection.Started {
		t.Fatalf("auto: profile %q, detection %+v", w.Profile, w.Detection)
	}
	must(t, os.MkdirAll(filepath.Join(dir, ".devcontainer"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, ".devcontainer", "devcontainer.json"), []byte(`{"image": "x", "privileged": true}`), 0o644))
	w = config()
	must(t, detectProfile(w, detectAuto))
	if w.Profile != "go" || w.Profiles.Profiles["project"] != nil {
		t.Fatalf("a refused devcontainer.json: profile %q, detection %+v", w.Profile, w.Detection)
	}
}
