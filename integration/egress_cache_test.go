package integration

import (
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// hostTools puts this machine's Go toolchain and Node.js with npm where a
// session can mount them read-only (the test image has neither): GOROOT
// as it is, and a folder of the node binary and npm's package.
func hostTools(t *testing.T) (goroot, node string) {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	goroot = strings.TrimSpace(string(out))
	nodeBin, err1 := exec.LookPath("node")
	npmBin, err2 := exec.LookPath("npm")
	if err1 != nil || err2 != nil {
		msg := "this machine has no node and npm to mount into the session"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	nodeBin, _ = filepath.EvalSymlinks(nodeBin)
	npmCli, _ := filepath.EvalSymlinks(npmBin)
	npmDir := filepath.Dir(filepath.Dir(npmCli)) // .../node_modules/npm/bin/npm-cli.js
	node = t.TempDir()
	if out, err := exec.Command("sh", "-c", `mkdir -p "$1/bin" "$1/lib" && cp "$2" "$1/bin/node" && cp -a "$3" "$1/lib/npm"`, "sh", node, nodeBin, npmDir).CombinedOutput(); err != nil {
		t.Fatalf("copying node and npm: %v %s", err, out)
	}
	return goroot, node
}

// sumDB is the Go checksum database this machine's go command checks
// modules against.
func sumDB(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOSUMDB").Output()
	db := strings.Fields(strings.TrimSpace(string(out)))
	if err != nil || len(db) == 0 || db[0] == "off" {
		t.Fatalf("this machine's go checks no checksum database (GOSUMDB %q)", out)
	}
	name, _, _ := strings.Cut(db[0], "+")
	return name
}

// cacheResults counts the artefact cache's log records by result and the
// suffix of their path (".zip", ".tgz", ".deb").
func cacheResults(p *proc) map[string]int {
	n := map[string]int{}
	for _, rec := range p.logs.records() {
		if rec["msg"] != "egress cache" {
			continue
		}
		path := fmt.Sprint(rec["path"])
		n[fmt.Sprint(rec["result"])+" "+filepath.Ext(path)]++
	}
	return n
}

// A second session's go mod download, npm ci and apt-get download are
// served from the artefact cache the first session's filled, through the
// proxy's interception, while their own integrity checks pass: Go's
// checksum database (reached end to end), npm's lockfile integrity and
// apt's signed indexes.
func TestEgressCacheServesTheSecondSession(t *testing.T) {
	r := machineRegistries(t)
	db := sumDB(t)
	goroot, node := hostTools(t)
	args := []string{"--warm", "0", "--tmp-size", "512m",
		"--allowed-root", filepath.Dir(goroot), "--allowed-root", filepath.Dir(node),
		"--mount", goroot + ":go:ro", "--mount", node + ":node:ro",
		"--egress", r.npm.Hostname(), "--egress", r.goprox.Hostname(), "--egress", db,
		"--egress-cache", r.npm.Hostname(), "--egress-cache", r.goprox.Hostname()}
	for _, host := range r.apt {
		args = append(args, "--egress", host, "--egress-cache", host)
	}
	p := start(t, startOptions{transport: "http", image: pythonImage, args: args})
	env := fmt.Sprintf("export PATH=/workspace/go/bin:/workspace/node/bin:$PATH HOME=/tmp/home GOTOOLCHAIN=local GOFLAGS=-mod=mod "+
		"GOPATH=/tmp/gopath GOCACHE=/tmp/gocache GOPROXY=%s npm_config_registry=%s npm_config_cache=/tmp/npm; "+
		"npm() { node /workspace/node/lib/npm/bin/npm-cli.js \"$@\"; }; mkdir -p /tmp/home; ", r.goprox, r.npm)
	goMod := "mkdir -p /workspace/app && cd /workspace/app && printf 'module example.com/app\\n\\ngo 1.21\\n\\nrequire golang.org/x/text v0.14.0\\n' > go.mod && " +
		"go mod download -x golang.org/x/text 2>&1 | tail -3 && go mod verify && grep -q '^golang.org/x/text v0.14.0 h1:' go.sum && " +
		// Go checked the module against the checksum database (through the
		// module proxy, which serves it, or directly), and kept its signed tree head.
		"test \"$(go env GOSUMDB)\" = " + db + " && test -s /tmp/gopath/pkg/sumdb/" + db + "/latest"
	apt := "mkdir -p /tmp/apt/lists/partial /tmp/apt/cache/archives/partial && sed 's#http://#https://#' /etc/apt/sources.list > /tmp/apt/sources.list && " +
		"o='-o Dir::State::Lists=/tmp/apt/lists -o Dir::Cache=/tmp/apt/cache -o Debug::NoLocking=1 -o APT::Sandbox::User=nobody -o Acquire::Languages=none " +
		"-o Dir::Etc::SourceList=/tmp/apt/sources.list -o Dir::Etc::SourceParts=/nonexistent' && apt-get $o -q update >/tmp/apt/update.log 2>&1; " +
		"cd /workspace && apt-get $o -q download hello && ls hello_*.deb"
	session := func(name, npmStep string) {
		t.Helper()
		for what, step := range map[string]string{"go mod download": goMod, "npm": npmStep, "apt-get download": apt} {
			out := p.shell(map[string]any{"command": []string{"sh", "-c", env + step}, "timeout_seconds": 300})
			if out.ExitCode != 0 {
				log := p.run("sh", "-c", "tail -5 /tmp/apt/update.log")
				t.Fatalf("%s: %s: exit %d\n%s\n%s\n(apt update: %s)", name, what, out.ExitCode, out.Stdout, out.Stderr, log.Stdout)
			}
		}
	}
	session("the first session", "mkdir -p /workspace/web && cd /workspace/web && echo '{\"name\":\"web\",\"version\":\"1.0.0\"}' > package.json && "+
		"npm install --no-audit --no-fund left-pad@1.3.0 is-number@7.0.0")
	lock := p.run("cat", "/workspace/web/package-lock.json")
	pkg := p.run("cat", "/workspace/web/package.json")
	if !strings.Contains(lock.Stdout, `"integrity": "sha512-`) {
		t.Fatalf("the lockfile has no integrity:\n%s", lock.Stdout)
	}
	first := cacheResults(p)
	for _, ext := range []string{".zip", ".mod", ".tgz", ".deb"} {
		if first["stored "+ext] == 0 {
			t.Errorf("the first session stored no %s: %v", ext, first)
		}
	}
	// The second session: a new client of the same server, a new container.
	p.endSession()
	p.connect(nil)
	for name, content := range map[string]string{"web/package.json": pkg.Stdout, "web/package-lock.json": lock.Stdout} {
		if res := p.call("write_file", map[string]any{"file_path": name, "content": content}); res.IsError {
			t.Fatalf("write_file %s: %s", name, textOf(res))
		}
	}
	session("the second session", "cd /workspace/web && npm ci --no-audit --no-fund && test -f node_modules/left-pad/package.json")
	second := cacheResults(p)
	for _, ext := range []string{".zip", ".mod", ".tgz", ".deb"} {
		if second["hit "+ext]-first["hit "+ext] == 0 {
			t.Errorf("the second session got no %s from the cache: %v (first %v)", ext, second, first)
		}
		if second["stored "+ext] != first["stored "+ext] {
			t.Errorf("the second session stored %s again: %v (first %v)", ext, second, first)
		}
	}
	// From inside the container: a range, a path trick and another Host get
	// no cached answer, and store nothing.
	zip := r.goprox.JoinPath("golang.org/x/text/@v/v0.14.0.zip").String()
	tricky := strings.Replace(zip, "/@v/", "/@v/../@v/", 1)
	probe := p.shell(map[string]any{"command": []string{"sh", "-c",
		"curl -sS -o /dev/null -D - -r 0-9 " + zip + " | tr -d '\\r' | grep -v established | grep -i '^HTTP\\|^x-wink-cache'; " +
			"curl -sS -o /dev/null -D - --path-as-is " + tricky + " | tr -d '\\r' | grep -v established | grep -i '^HTTP\\|^x-wink-cache'; " +
			"curl -sS -o /dev/null -D - -H 'Host: example.org' " + zip + " | tr -d '\\r' | grep -v established | grep -i '^HTTP\\|^x-wink-cache'; " +
			"curl -sS -o /dev/null -D - " + zip + " | tr -d '\\r' | grep -v established | grep -i '^HTTP\\|^x-wink-cache'"}, "timeout_seconds": 60})
	if lines := strings.Split(strings.TrimSpace(probe.Stdout), "\n"); len(lines) != 5 || !strings.HasPrefix(lines[0], "HTTP/1.1 206") ||
		!strings.HasPrefix(lines[1], "HTTP/1.1 ") || lines[2] != "HTTP/1.1 421 Misdirected Request" || lines[3] != "HTTP/1.1 200 OK" || !strings.EqualFold(lines[4], "X-Wink-Cache: hit") {
		t.Errorf("a range, a path trick, another Host, then the plain request: %q %s", probe.Stdout, probe.Stderr)
	}
	if after := cacheResults(p); after["stored .zip"] != first["stored .zip"] {
		t.Errorf("the probes stored a .zip: %v", after)
	}
	// The cache outlives the sessions, in its directory, 0700.
	dir := filepath.Join(p.cache, "egress-cache")
	if info, err := os.Stat(dir); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("the cache directory %s: %v %v", dir, info, err)
	}
}

// Rootless Podman: the cache lives in the rootless user's cache directory,
// the session trusts the CA, and a second fetch of an artefact from a
// private-CA server on this machine is served from disk.
func TestRootlessEgressCache(t *testing.T) {
	u := needRootless(t)
	caPEM, cert := testCA(t)
	body := strings.Repeat("artefact\n", 20000)
	api := serveHeaders(t, cert, func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, body) })
	bundle := filepath.Join(u.dir(t), "private-ca.pem")
	must(t, os.WriteFile(bundle, caPEM, 0o644))
	host := "localhost:" + api.port
	p := start(t, startOptions{as: u, image: pythonImage, env: u.shellEnv(t),
		args: append([]string{"--ca-bundle", bundle, "--egress", host, "--egress-cache", host}, rootlessArgs...)})
	fetch := func() string {
		return pyStdin(t, p, `import hashlib, os, ssl, sys, urllib.request
os.environ.pop("no_proxy", None); os.environ.pop("NO_PROXY", None)
ctx = ssl.create_default_context(cafile="/etc/ssl/certs/ca-certificates.crt")
opener = urllib.request.build_opener(urllib.request.ProxyHandler({"https": "http://127.0.0.1:3128"}), urllib.request.HTTPSHandler(context=ctx))
r = opener.open(sys.stdin.read().strip(), timeout=30)
print(r.headers.get("X-Wink-Cache"), hashlib.sha256(r.read()).hexdigest())
`, "https://"+host+"/example.com/m/@v/v1.0.0.zip")
	}
	want := fmt.Sprintf("%x", sha256.Sum256([]byte(body)))
	if first, second := fetch(), fetch(); first != "miss "+want+"\n" || second != "hit "+want+"\n" {
		t.Fatalf("rootless: first %q, second %q", first, second)
	}
	if got := api.requests(); len(got) != 1 {
		t.Fatalf("the server saw %q, want one request", got)
	}
	info, err := os.Stat(filepath.Join(p.cache, "egress-cache"))
	if err != nil || info.Sys().(*syscall.Stat_t).Uid != uint32(u.uid) {
		t.Fatalf("the cache directory is not the rootless user's: %v %v", info, err)
	}
}
