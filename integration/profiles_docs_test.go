package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/readme"
)

const (
	profilesExampleBeg = "<!-- profiles-example:begin (built by TestDocsProfilesBuild) -->"
	profilesExampleEnd = "<!-- profiles-example:end -->"
	profilesTableBeg   = "<!-- profiles-table:begin (written by `go test ./integration -run TestDocsProfilesBuild -update`) -->"
	profilesTableEnd   = "<!-- profiles-table:end -->"
)

// docsProfiles returns the example profiles file of docs/toolchains.md.
func docsProfiles(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(toolchainsDoc)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	i, j := strings.Index(text, profilesExampleBeg), strings.Index(text, profilesExampleEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no profiles example between its markers", toolchainsDoc)
	}
	block := text[i+len(profilesExampleBeg) : j]
	block = strings.TrimSpace(block)
	block = strings.TrimSuffix(strings.TrimPrefix(block, "```yaml"), "```")
	return block
}

// aptMirrorHost is the host of the first Debian source in the workspace
// image's apt configuration: where its profiles' setups download from.
func aptMirrorHost(t *testing.T) string {
	t.Helper()
	out, err := podman(t, "run", "--rm", "--network", "none", "--entrypoint", "cat", pythonImage, "/etc/apt/sources.list")
	if err != nil {
		t.Fatalf("reading the image's apt sources: %v %s", err, out)
	}
	m := regexp.MustCompile(`(?m)^deb\s+(?:\[[^]]*\]\s+)?https?://([^/\s:]+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no Debian source in the image's /etc/apt/sources.list:\n%s", out)
	}
	return m[1]
}

// TestDocsProfilesBuild builds the example profiles of docs/toolchains.md, as a user
// would with `wink-mcp profiles build`, three at once, and runs each
// toolchain in a session of its profile. With -update it writes the
// page's table of their build times and sizes.
func TestDocsProfilesBuild(t *testing.T) {
	t.Parallel() // it mostly waits: see the package doc
	file := filepath.Join(t.TempDir(), "profiles.yaml")
	if err := os.WriteFile(file, []byte(docsProfiles(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	mirror := aptMirrorHost(t)
	env := append(os.Environ(), "APT_MIRROR_HOST="+mirror)
	cache := t.TempDir()
	checks := map[string][]string{
		"python": {"python3", "-c", "import numpy, pytest, requests; print(int(numpy.array([6]).prod() * 7))"},
		"node":   {"sh", "-c", "node -e 'console.log(6*7)' && npm --version >/dev/null && echo npm-ok"},
		"go": {"sh", "-c", "printf 'package main\\nimport \"fmt\"\\nfunc main() { fmt.Println(6*7) }\\n' > main.go && " +
			"go run main.go && pwd"},
	}
	want := map[string]string{"python": "42", "node": "42\nnpm-ok", "go": "42\n/workspace/src"}
	t.Cleanup(func() {
		for name := range checks {
			for _, image := range profileImagesOfFile(t, name, file) {
				_, _ = podman(t, "rmi", "-f", image)
			}
		}
	})
	took := map[string]time.Duration{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name := range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			cmd := exec.Command(winkBin, "profiles", "build", name, "--profiles", file, "--cache-dir", cache,
				"--podman-url", "unix://"+podmanSocket, "--log-level", "warn")
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), name+": built ") {
				t.Errorf("building %s: %v\n%s", name, err, out)
				return
			}
			mu.Lock()
			took[name] = time.Since(start)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	base, _ := podman(t, "image", "inspect", "--format", "{{.Size}}", pythonImage)
	baseSize, _ := strconv.ParseInt(strings.TrimSpace(base), 10, 64)
	var table strings.Builder
	table.WriteString("| profile | setup (the three built at once) | image | added to the base |\n| --- | --- | --- | --- |\n")
	for _, name := range []string{"python", "node", "go"} {
		p := start(t, startOptions{image: pythonImage, env: []string{"APT_MIRROR_HOST=" + mirror},
			args: []string{"--profiles", file, "--profile", name}})
		out := p.run(checks[name]...)
		if got := strings.TrimSpace(out.Stdout); got != want[name] {
			t.Errorf("%s: %v printed %q (stderr %q), want %q", name, checks[name], got, out.Stderr, want[name])
		}
		images := profileImagesOfFile(t, name, file)
		if len(images) != 1 {
			t.Fatalf("%s: images %v", name, images)
		}
		size, _ := podman(t, "image", "inspect", "--format", "{{.Size}}", images[0])
		n, _ := strconv.ParseInt(strings.TrimSpace(size), 10, 64)
		fmt.Fprintf(&table, "| `%s` | %.0f s | %d MB | %d MB |\n", name, took[name].Seconds(), n/1e6, (n-baseSize)/1e6)
		t.Logf("%s: built in %s, %d bytes", name, took[name].Round(time.Second), n)
	}
	if *updateDocs {
		if err := readme.Sync(toolchainsDoc, profilesTableBeg, profilesTableEnd, table.String(), true); err != nil {
			t.Fatal(err)
		}
	}
}
