package integration

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// setupWorkspaceBound runs a setup that writes 96 MiB into /workspace
// against a limits.setup_disk of 32 MiB, through workspace_profile and
// through `wink-mcp profiles build`: each is stopped with an error naming
// the limit and /workspace, and leaves nothing on the host: nothing of
// the setup in the cache directory, no container, no image.
func setupWorkspaceBound(t *testing.T) {
	file, nonce := profilesFile(t, `profiles:
  wsfill-NONCE:
    image: IMAGE
    limits: {setup_disk: 32m, setup_timeout: 2m}
    setup: ["i=0; while [ $i -lt 12 ]; do head -c 8388608 /dev/zero > /workspace/f$i; i=$((i+1)); sleep 0.2; done; sleep 20"]
`)
	name := "wsfill-" + nonce
	t.Cleanup(func() { removeProfileImages(t, nonce) })
	p := start(t, startOptions{transport: "http", args: []string{"--profiles", file, "--warm", "0", "--lazy"}})
	cliCache, cliPrefix := t.TempDir(), "wt"+randomHex(4)
	t.Cleanup(func() { removeContainers(t, cliPrefix) })
	tool := textOf(p.call("workspace_profile", map[string]any{"name": name}))
	cli, err := profilesCLI(t, file, cliCache, "build", name, "--name-prefix", cliPrefix)
	want := []string{"more than limits.setup_disk (32.0 MiB)", "/workspace"}
	broken := 0
	for _, run := range []struct {
		how, text, cache, prefix string
		failed                   bool
	}{{"workspace_profile", tool, p.cache, p.prefix, strings.Contains(tool, "setup failed")}, {"profiles build", cli, cliCache, cliPrefix, err != nil}} {
		held := run.failed
		for _, w := range want {
			held = held && strings.Contains(run.text, w)
		}
		if !held {
			t.Errorf("%s: %q; want the setup stopped, naming %q", run.how, run.text, want)
		}
		if left := setupFiles(t, run.cache); len(left) > 0 {
			held = false
			t.Errorf("%s left on the host: %v", run.how, left)
		}
		if setups := setupContainers(t, run.prefix); len(setups) > 0 {
			held = false
			t.Errorf("%s left containers: %v", run.how, setups)
		}
		if !held {
			broken++
		}
	}
	if images := profileImagesOf(t, name); len(images) > 0 {
		broken++
		t.Errorf("a stopped setup left images %v", images)
	}
	recordPromise(promiseFigure{Class: "profiles: a setup writing 96 MiB into /workspace against limits.setup_disk 32 MiB, through workspace_profile and `profiles build`",
		Tried: 3, Broken: broken,
		Measured: "both were stopped with an error naming limits.setup_disk and /workspace (the container's own directory, counted with the rest of the setup's writes), and left no file or directory of the setup in the cache directory, no container and no image"})
}

// setupFiles lists what is left under dir of a setup's session: any
// path naming one.
func setupFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), "setup-") {
			out = append(out, path)
		}
		return nil
	})
	return out
}

// setupContainers are the setup containers named with prefix.
func setupContainers(t *testing.T, prefix string) []string {
	t.Helper()
	var out []string
	for _, name := range containersNamed(t, prefix) {
		if strings.Contains(name, "setup-") {
			out = append(out, name)
		}
	}
	return out
}
