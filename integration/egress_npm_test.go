package integration

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// npmPackages is a front end's usual set: a few hundred packages.
const npmPackages = `{"name":"app","version":"1.0.0","private":true,
"dependencies":{"express":"^4","eslint":"^8","webpack":"^5","jest":"^29"}}
`

// egressUse is what a session's proxy carried, read from its log.
type egressUse struct {
	allowed, refused int // connections carried, and turned away by the proxy's limit
	peak             int // the most connections open at once
}

// egressUseOf reads the egress log records of p: every connection's start
// (its end less its duration) and end give the most open at once.
func egressUseOf(p *proc) egressUse {
	var u egressUse
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, rec := range p.logs.records() {
		switch {
		case rec["msg"] == "egress allowed":
			end, err := time.Parse(time.RFC3339Nano, fmt.Sprint(rec["time"]))
			if err != nil {
				continue
			}
			ms, _ := rec["duration_ms"].(float64)
			u.allowed++
			edges = append(edges, edge{end.Add(-time.Duration(ms) * time.Millisecond), 1}, edge{end, -1})
		case rec["msg"] == "egress refused" && fmt.Sprint(rec["status"]) == "503" && strings.Contains(fmt.Sprint(rec["reason"]), "--egress-max-conns"):
			u.refused++
		}
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta // an end before a start at the same instant
	})
	open := 0
	for _, e := range edges {
		open += e.delta
		u.peak = max(u.peak, open)
	}
	return u
}

// nodeProfile is the node profile of docs/toolchains.md, built once for a test: its
// profiles file and the cache directory that holds the build's records.
type nodeProfile struct{ file, cache, mirror string }

// buildNodeProfile writes the profiles of docs/toolchains.md to a file of the test's
// and builds its node profile: a few minutes the first time, since the
// setup installs Node.js from the Debian mirror. Every session of the
// test uses that one file, so none builds it again (a profile's image
// key names its file).
func buildNodeProfile(t *testing.T) nodeProfile {
	t.Helper()
	np := nodeProfile{file: filepath.Join(t.TempDir(), "profiles.yaml"), cache: t.TempDir(), mirror: aptMirrorHost(t)}
	if err := os.WriteFile(np.file, []byte(docsProfiles(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	// The image is the test's own (its key names the file): 0.9 GB left
	// on the host by every run otherwise.
	t.Cleanup(func() {
		out, _ := podman(t, "images", "-q", "--filter", "label=io.wink-mcp.profile-file="+np.file)
		for _, id := range strings.Fields(out) {
			_, _ = podman(t, "rmi", "-f", id)
		}
	})
	build := exec.Command(winkBin, "profiles", "build", "node", "--profiles", np.file, "--cache-dir", np.cache,
		"--podman-url", "unix://"+podmanSocket, "--log-level", "warn")
	build.Env = append(os.Environ(), "APT_MIRROR_HOST="+np.mirror)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the node profile: %v\n%s", err, out)
	}
	return np
}

// npmInstall runs npm install of npmPackages through the proxy, in a
// session of the node profile np allowed this machine's npm registry,
// with npm settings (npm_config_*) and flags for the server; it returns
// the command's result and what the proxy carried.
func npmInstall(t *testing.T, np nodeProfile, npmEnv map[string]any, extra ...string) (exit int, stderr string, took time.Duration, use egressUse) {
	t.Helper()
	r := machineRegistries(t)
	p := start(t, startOptions{image: pythonImage, cache: np.cache, env: []string{"APT_MIRROR_HOST=" + np.mirror},
		args: append([]string{"--warm", "0", "--profiles", np.file, "--profile", "node", "--egress", r.npm.Hostname()}, extra...)})
	caBundle(t, p)
	if res := p.call("write_file", map[string]any{"file_path": "app/package.json", "content": npmPackages}); res.IsError {
		t.Fatal(textOf(res))
	}
	env := map[string]any{"npm_config_registry": r.npm.String(), "NODE_EXTRA_CA_CERTS": "/workspace/ca.pem"}
	maps.Copy(env, npmEnv)
	begin := time.Now()
	out := p.shell(map[string]any{"command": []string{"npm", "install", "--no-audit", "--no-fund", "--loglevel", "warn"}, "cwd": "app",
		"env": env, "timeout_seconds": 170}) // under the harness's 3 minutes a call
	took = time.Since(begin)
	if out.ExitCode == 0 {
		if n := p.run("sh", "-c", "ls app/node_modules | wc -l"); strings.TrimSpace(n.Stdout) == "0" {
			t.Errorf("npm install answered 0 but node_modules is empty")
		}
	}
	// The registry's name stays out of the test's output.
	return out.ExitCode, strings.ReplaceAll(out.Stderr, r.npm.Hostname(), "<npm registry>"), took, egressUseOf(p)
}

// npm install of a few hundred packages through the proxy, as a new user
// with the node profile of docs/toolchains.md would: it succeeds, and nothing is
// refused by the proxy's connection limit. With a limit set far too low,
// npm's own error names wink-mcp's limit and the flag, not the registry.
func TestEgressNpmInstall(t *testing.T) {
	np := buildNodeProfile(t)
	exit, stderr, took, use := npmInstall(t, np, nil)
	t.Logf("npm install: exit %d in %s; %d connections, at most %d at once, %d turned away", exit, took.Round(time.Second), use.allowed, use.peak, use.refused)
	if exit != 0 || use.refused > 0 {
		t.Errorf("npm install: exit %d, %d connections turned away by the limit\n%s", exit, use.refused, stderr)
	}
	// npm would retry each refused request for minutes: once is enough here.
	exit, stderr, _, use = npmInstall(t, np, map[string]any{"npm_config_fetch_retries": "0"}, "--egress-max-conns", "4")
	t.Logf("npm install with --egress-max-conns 4: exit %d; %d connections, at most %d at once, %d turned away", exit, use.allowed, use.peak, use.refused)
	for line := range strings.Lines(stderr) {
		if strings.Contains(line, "egress limit") {
			t.Logf("npm said: %s", strings.TrimSpace(line))
			break
		}
	}
	if use.peak > 4 || exit != 0 && !strings.Contains(stderr, "wink-mcp egress limit --egress-max-conns 4") {
		t.Errorf("npm install past a limit of 4: exit %d, %d at once; want npm's error to name wink-mcp's limit\n%s", exit, use.peak, stderr)
	}
}
