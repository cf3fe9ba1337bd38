package integration

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// machineCABundle is what this machine trusts: its egress re-signs TLS
// with a CA of its own, which only this bundle holds, so the built-in
// profiles' setups and sessions get it with --ca-bundle, as a user
// behind such a proxy would give it.
const machineCABundle = "/etc/ssl/certs/ca-certificates.crt"

// init asks npm for its registry once for every server the tests
// start: a server whose environment names none asks npm itself, which
// costs each start about half a second (docs/toolchains.md).
func init() {
	if os.Getenv("WINK_NPM_REGISTRY") != "" || os.Getenv("npm_config_registry") != "" {
		return
	}
	if out, err := exec.Command("npm", "config", "get", "registry").Output(); err == nil && strings.HasPrefix(string(out), "https://") {
		os.Setenv("WINK_NPM_REGISTRY", strings.TrimSpace(string(out)))
	}
}

// builtinProject is one small real project of integration/testdata/projects,
// the built-in profile its markers ask for, the registry its build
// reaches ("" for none) and the command that builds and tests it.
type builtinProject struct {
	lang, profile, marker, egress string
	build                         string
	want                          string
}

// buildBuiltinProfiles builds the built-in profiles' images as `profiles
// build` does, each in its own process at once; an image already built
// (they are keyed by their inputs, like any profile's) is found at once,
// so the tests that follow and later runs share them.
func buildBuiltinProfiles(t *testing.T, names ...string) {
	t.Helper()
	cache := t.TempDir()
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			cmd := exec.Command(winkBin, "profiles", "build", name, "--image", pythonImage, "--ca-bundle", machineCABundle,
				"--cache-dir", cache, "--podman-url", "unix://"+podmanSocket, "--log-level", "warn")
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), name+": ") {
				t.Errorf("building the built-in %s profile: %v\n%s", name, err, out)
				return
			}
			t.Logf("built-in %s: ready in %s", name, time.Since(start).Round(100*time.Millisecond))
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
}

// projectFolder copies the test project lang into a new allowed root as
// the folder proj, owned by the host user as a user's checkout is.
func projectFolder(t *testing.T, lang string) (root, folder string) {
	t.Helper()
	root = t.TempDir()
	folder = filepath.Join(root, "proj")
	src := filepath.Join("testdata", "projects", lang)
	must(t, filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		dst := filepath.Join(folder, rel)
		if d.IsDir() {
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
		} else {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if err := os.WriteFile(dst, data, 0o644); err != nil {
				return err
			}
		}
		return os.Lchown(dst, hostUID, hostUID)
	}))
	must(t, os.Lchown(folder, hostUID, hostUID))
	return root, folder
}

// TestBuiltinProfilesBuildDetectedProjects: with no profiles file, a
// small real Go, Node, Python and Rust project mounted from the host is
// recognised by its markers (--detect auto), the session starts in the
// built-in profile, and the project builds and passes its tests there:
// Go and Node with their dependencies from the real registries, through
// the egress allowlist; Python and Rust with none. What the session
// changed stays out of the host folder.
func TestBuiltinProfilesBuildDetectedProjects(t *testing.T) {
	reg := machineRegistries(t)
	buildBuiltinProfiles(t, "go", "node", "python", "rust")
	projects := []builtinProject{
		{lang: "go", profile: "go", marker: "go.mod is a Go module", egress: reg.goprox.Host,
			build: "cd proj && go version && go test ./...", want: "ok  \texample.com/wordfreq"},
		{lang: "node", profile: "node", marker: "package.json is a Node.js package", egress: reg.npm.Host,
			build: "cd proj && node --version && npm ci && npm test", want: "# pass 1"},
		{lang: "python", profile: "python", marker: "pyproject.toml is a Python project",
			build: "cd proj && python3 -m venv /tmp/venv && /tmp/venv/bin/python -m unittest -v 2>&1 && python3 -m pytest -q -p no:cacheprovider", want: "3 passed"},
		{lang: "rust", profile: "rust", marker: "Cargo.toml is a Rust crate",
			build: "cd proj && cargo test --offline 2>&1", want: "test result: ok. 1 passed"},
	}
	for _, pr := range projects {
		t.Run(pr.lang, func(t *testing.T) {
			root, folder := projectFolder(t, pr.lang)
			args := []string{"--allowed-root", root, "--mount", folder, "--detect", "auto", "--ca-bundle", machineCABundle}
			if pr.egress != "" {
				args = append(args, "--egress", pr.egress)
			}
			p := start(t, startOptions{image: pythonImage, args: args})
			if text := p.promptText(); !strings.Contains(text, "The workspace starts in the `"+pr.profile+"` profile, found in /workspace/proj: "+pr.marker) {
				t.Errorf("the prompt does not say what was found:\n%s", text)
			}
			out := p.shell(map[string]any{"command": []string{"sh", "-c", pr.build}, "timeout_seconds": 300})
			if out.ExitCode != 0 || !strings.Contains(out.Stdout, pr.want) {
				t.Fatalf("%s: exit %d\nstdout: %s\nstderr: %s", pr.build, out.ExitCode, out.Stdout, out.Stderr)
			}
			t.Logf("%s built and tested in %d ms", pr.lang, out.DurationMS)
			entries, err := os.ReadDir(folder)
			must(t, err)
			for _, e := range entries {
				if name := e.Name(); name == "node_modules" || name == "Cargo.lock" || name == "__pycache__" {
					t.Errorf("the host folder got %s: the session's work reached the host", name)
				}
			}
		})
	}
}

// TestDetectAskOffersWhatItFound: by default (--detect ask) the session
// starts in no profile, and the prompt and workspace_profile say which
// one the folder asks for and why; the model's switch then works. An
// explicit --profile wins over --detect auto.
func TestDetectAskOffersWhatItFound(t *testing.T) {
	buildBuiltinProfiles(t, "go", "python")
	root, folder := projectFolder(t, "go")
	p := start(t, startOptions{image: pythonImage, args: []string{"--allowed-root", root, "--mount", folder, "--ca-bundle", machineCABundle}})
	found := "Found in /workspace/proj: go.mod is a Go module, so the go profile. Switch to it with `workspace_profile` (name `go`)"
	if text := p.promptText(); !strings.Contains(text, found) || !strings.Contains(text, "the workspace uses none yet") {
		t.Errorf("the prompt does not offer what was found:\n%s", text)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := p.client.ListTools(ctx, mcp.ListToolsRequest{})
	must(t, err)
	described := false
	for _, tool := range list.Tools {
		if tool.Name == "workspace_profile" {
			described = strings.Contains(tool.Description, found)
			for _, name := range []string{"- general:", "- python:", "- node:", "- go:", "- rust:"} {
				if !strings.Contains(tool.Description, name) {
					t.Errorf("workspace_profile does not offer %s", name)
				}
			}
		}
	}
	if !described {
		t.Error("workspace_profile does not say what was found")
	}
	if out := p.run("sh", "-c", "command -v go"); out.ExitCode == 0 {
		t.Fatalf("go is there before the switch: %s", out.Stdout)
	}
	if res := p.call("workspace_profile", map[string]any{"name": "go", "restart": true}); res.IsError {
		t.Fatalf("workspace_profile go: %s", textOf(res))
	}
	if out := p.run("go", "version"); out.ExitCode != 0 || !strings.Contains(out.Stdout, "go1.25.") {
		t.Fatalf("go version after the switch: %+v", out)
	}

	q := start(t, startOptions{image: pythonImage, args: []string{"--allowed-root", root, "--mount", folder, "--detect", "auto", "--profile", "python"}})
	if text := q.promptText(); !strings.Contains(text, "the workspace uses `python`") || strings.Contains(text, "/workspace/proj: go.mod") {
		t.Errorf("--profile python did not win over --detect auto:\n%s", text)
	}
}
