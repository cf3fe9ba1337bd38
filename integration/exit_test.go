package integration

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The scenarios of a new user's first day with --export-on-exit: an npm
// project mounted, npm install's node_modules (about 20,000 files the
// folder ignores) and two real changes, and the server ended every way a
// client or a person ends it. TestReliabilityExit runs them.

// nodeModulesFiles is how many files npmWork puts under node_modules.
const nodeModulesFiles = 1000 * 20

// indexEdited is src/index.js after the session's one-line change.
const indexEdited = "const app = require('./app');\napp.listen(8080);\n"

// npmProject makes a host folder as a new user's npm project, under a new
// allowed root, owned by hostUID.
func npmProject(t *testing.T) (root, folder string) {
	t.Helper()
	root = t.TempDir()
	folder = filepath.Join(root, "proj")
	for name, content := range map[string]string{
		".gitignore":   "node_modules/\n*.log\n",
		"package.json": "{\"name\": \"proj\", \"version\": \"1.0.0\"}\n",
		"src/index.js": "const app = require('./app');\napp.listen(3000);\n",
		"src/app.js":   "module.exports = { listen() {} };\n",
	} {
		p := filepath.Join(folder, name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(content), 0o644))
	}
	must(t, filepath.WalkDir(folder, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, hostUID, hostUID)
	}))
	return root, folder
}

// npmWorkCommands are the podman_shell calls of a day's work in proj: a
// one-line change, a new file, npm install's node_modules, and, with
// bigMB > 0, a random binary file of that size, which makes the export
// take seconds (so a test can catch it in the act).
func npmWorkCommands(bigMB int) [][]string {
	names := []string{"index.js", "package.json"}
	for i := range 18 {
		names = append(names, fmt.Sprintf("m%d.js", i))
	}
	files := strings.Join(names, " ")
	script := "cd proj && sed -i s/3000/8080/ src/index.js && printf 'export const routes = [];\\n' > src/routes.js && " +
		"echo 'npm notice' > npm-debug.log && mkdir -p node_modules && cd node_modules && " +
		fmt.Sprintf("for i in $(seq 1 %d); do mkdir -p pkg$i/lib && cd pkg$i/lib && touch %s && cd ../..; done", nodeModulesFiles/20, files)
	cmds := [][]string{{"sh", "-c", script}}
	if bigMB > 0 {
		cmds = append(cmds, []string{"sh", "-c", fmt.Sprintf("dd if=/dev/urandom of=proj/assets.bin bs=1048576 count=%d 2>/dev/null && sha256sum proj/assets.bin", bigMB)})
	}
	return cmds
}

// npmWork runs npmWorkCommands in p's session and returns the sha256 of
// the big file ("" without one).
func npmWork(t *testing.T, p *proc, bigMB int) string {
	t.Helper()
	sum := ""
	for _, argv := range npmWorkCommands(bigMB) {
		res := p.shell(map[string]any{"command": argv, "timeout_seconds": 120})
		if res.ExitCode != 0 {
			t.Fatalf("%v: %+v", argv, res)
		}
		if fields := strings.Fields(res.Stdout); len(fields) == 2 {
			sum = fields[0]
		}
	}
	return sum
}

// exportedPatches lists the patches under exportDir, and the temporary
// files a cut export may have left.
func exportedPatches(t *testing.T, exportDir string) (patches, temps []string) {
	t.Helper()
	patches, _ = filepath.Glob(filepath.Join(exportDir, "*", "proj.patch"))
	temps, _ = filepath.Glob(filepath.Join(exportDir, "*", ".proj.patch-*"))
	return patches, temps
}

// sweepWithNextServer starts a server on cache, as the user's next session
// would (no mounts, no export), waits until its sweep has exported what a
// dead server kept and deleted its instance directory, and returns its log.
func sweepWithNextServer(t *testing.T, cache string) *logBuffer {
	t.Helper()
	p := start(t, startOptions{cache: cache})
	p.waitLog(2*time.Minute, "orphan sweep done", nil)
	p.endSession()
	return p.logs
}

// recoverExports is sweepWithNextServer, which must export kept changes.
func recoverExports(t *testing.T, cache string) {
	t.Helper()
	if logs := sweepWithNextServer(t, cache); logs.find("exported the session's changes", nil) == nil {
		t.Errorf("the next server did not export the kept changes:\n%s", logs.String())
	}
}

// checkNpmPatch checks that the patch holds the session's real changes
// (and the big file, by its sha256 bigSum), applies to a clean copy of
// folder, and names node_modules in one line; it returns the patch.
func checkNpmPatch(t *testing.T, folder, patchFile, bigSum string) []byte {
	t.Helper()
	patch, err := os.ReadFile(patchFile)
	must(t, err)
	dst := t.TempDir()
	if out, err := exec.Command("cp", "-a", folder+"/.", dst).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	apply := exec.Command("git", "apply", "-")
	apply.Dir, apply.Stdin = dst, bytes.NewReader(patch)
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("git apply %s: %v\n%s", patchFile, err, out)
	}
	for name, want := range map[string]string{"src/index.js": indexEdited, "src/routes.js": "export const routes = [];\n"} {
		if got, _ := os.ReadFile(filepath.Join(dst, name)); string(got) != want {
			t.Errorf("after git apply, %s holds %q, want %q", name, got, want)
		}
	}
	if bigSum != "" {
		data, err := os.ReadFile(filepath.Join(dst, "assets.bin"))
		sum := sha256.Sum256(data)
		if err != nil || hex.EncodeToString(sum[:]) != bigSum {
			t.Errorf("after git apply, assets.bin is not the session's (%v)", err)
		}
	}
	if _, err := os.Stat(filepath.Join(dst, "node_modules")); err == nil {
		t.Errorf("node_modules, which the folder ignores, is in the patch")
	}
	if n := bytes.Count(patch, []byte("# not in this patch: node_modules/")); n != 1 {
		t.Errorf("%d lines name node_modules, want one summary line", n)
	}
	return patch
}

// exitOutcome is what became of a session's changes after its server ended.
type exitOutcome struct {
	written, recovered, lost bool
}

// checkExitOutcome finds the session's patch: written by its server, or,
// when the server could not, kept (`wink-mcp export` finds the session)
// and written by the next server to start on cache. It checks the patch
// and that nothing is left behind.
func checkExitOutcome(t *testing.T, cache, exportDir, folder, bigSum string, logs *logBuffer) exitOutcome {
	t.Helper()
	var o exitOutcome
	patches, _ := exportedPatches(t, exportDir)
	o.written = len(patches) == 1
	if !o.written {
		if logs != nil && !strings.Contains(logs.String(), "are kept") {
			t.Errorf("the server's stderr does not say where the unexported changes are kept:\n%s", logs.String())
		}
		// HTTP servers keep warm containers, whose sessions are listed too.
		found := false
		for _, dir := range sessionDirs(t, cache) {
			out, err := exec.Command(winkBin, "export", "--cache-dir", cache, "--session", filepath.Base(dir)).Output()
			found = found || (err == nil && strings.Contains(string(out), "+app.listen(8080);"))
		}
		if !found {
			t.Errorf("wink-mcp export does not find the kept session among %v", sessionDirs(t, cache))
		}
		recoverExports(t, cache)
		patches, _ = exportedPatches(t, exportDir)
		o.recovered = len(patches) == 1
	}
	if len(patches) != 1 {
		o.lost = true
		t.Errorf("the session's changes are lost: patches %v, session directories left %v", patches, sessionDirs(t, cache))
		return o
	}
	checkNpmPatch(t, folder, patches[0], bigSum)
	if o.written && len(sessionDirs(t, cache)) > 0 {
		// Killed after its export: what it left goes with the next start.
		sweepWithNextServer(t, cache)
	}
	if _, temps := exportedPatches(t, exportDir); len(temps) > 0 {
		t.Errorf("a cut export left temporary files: %v", temps)
	}
	if left := sessionDirs(t, cache); len(left) > 0 {
		t.Errorf("session directories left after the export: %v", left)
	}
	return o
}

// tsExitResult is what stdio_exit.mjs prints.
type tsExitResult struct {
	ChangesMs, ChangesBytes, DiffMs, DiffBytes, CloseMs, Pid int
	Diff                                                     string
}

// runTSExit runs one session through the TypeScript SDK's stdio client,
// which ends it as the SDK does, and returns what it measured, the
// server's log and, with the folder, where its changes went.
func runTSExit(t *testing.T) (tsExitResult, exitOutcome) {
	t.Helper()
	script := filepath.Join("tsclient", "stdio_exit.mjs")
	if _, err := os.Stat(filepath.Join("tsclient", "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		t.Fatal("the TypeScript SDK is missing: run npm ci in integration/tsclient (make setup does)")
	}
	root, folder := npmProject(t)
	cache, exportDir, prefix := t.TempDir(), t.TempDir(), "wt"+randomHex(4)
	t.Cleanup(func() { removeContainers(t, prefix) })
	stderr := filepath.Join(t.TempDir(), "stderr")
	var calls [][]any
	for _, argv := range npmWorkCommands(0) {
		calls = append(calls, []any{"podman_shell", map[string]any{"command": argv, "timeout_seconds": 120}})
	}
	spec, err := json.Marshal(map[string]any{"bin": winkBin, "stderr": stderr, "calls": calls, "args": []string{
		"--image", testImage, "--cache-dir", cache, "--name-prefix", prefix, "--podman-url", "unix://" + podmanSocket,
		"--log-format", "json", "--mount", folder, "--allowed-root", root, "--export-on-exit", exportDir}})
	must(t, err)
	cmd := exec.Command("node", script, string(spec))
	var errOut strings.Builder
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	var r tsExitResult
	if err != nil || json.Unmarshal(out, &r) != nil {
		log, _ := os.ReadFile(stderr)
		t.Fatalf("%s: %v\n%s\n%s\nwink-mcp log:\n%s", script, err, out, errOut.String(), log)
	}
	waitUntil(t, time.Minute, "the server to be gone", func() bool { return !processAlive(r.Pid) })
	log, _ := os.ReadFile(stderr)
	// The SDK kills the server 4 s after closing its stdin: it may not
	// have had the time to say anything.
	o := checkExitOutcome(t, cache, exportDir, folder, "", nil)
	if t.Failed() {
		t.Logf("wink-mcp log:\n%s", log)
	}
	return r, o
}
