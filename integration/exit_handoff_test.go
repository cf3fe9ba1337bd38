package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/tools"
)

// The ends of a workspace a stdio session with --export-on-exit hands to
// another process, with a real change to a mounted folder: each is the
// end of the session that made the change, so each must export it first
// (to the folder the giver was started with), or keep it where `wink-mcp
// export` and the next start find it. TestReliabilityExit runs them.

// handoffRun is one handed-over workspace and where its change is due.
type handoffRun struct {
	root, folder string
	cache        string
	exportDir    string   // the giver's --export-on-exit
	mountArgs    []string // --mount and --allowed-root: a process that attaches must mount the same
	giver        *proc
	handoff      tools.WorkspaceHandoffResult
	// attached says a second process attached the workspace and made a
	// change of its own, src/b.js, which must be exported too.
	attached bool
}

// handoffEnding is one way a handed-over workspace ends.
type handoffEnding struct {
	name string
	ttl  int // the handle's expires_in_seconds
	// blocked: the export folder cannot be written (a file stands where
	// one of its parents should be) until the test unblocks it.
	blocked bool
	end     func(t *testing.T, r *handoffRun)
}

var handoffEndings = []handoffEnding{
	{name: "its handle expires in the giver's process", ttl: 3, end: func(t *testing.T, r *handoffRun) {
		waitUntil(t, 2*time.Minute, "the expired workspace to be ended", func() bool {
			return !fileExists(filepath.Join(r.cache, "workspaces", r.handoff.Workspace))
		})
		r.giver.endSession()
	}},
	{name: "the next start's sweep, after its giver ended", ttl: 3, end: func(t *testing.T, r *handoffRun) {
		r.giver.endSession()
		waitUntil(t, time.Minute, "the handle to expire", func() bool { return time.Now().After(r.handoff.Expires.Add(time.Second)) })
		sweepWithNextServer(t, r.cache)
	}},
	{name: "the attaching session, exporting elsewhere, ends (stdin closed)", ttl: 600, end: func(t *testing.T, r *handoffRun) {
		other := t.TempDir()
		b := r.attach(t, "--export-on-exit", other)
		b.endSession()
		// The change is the giver's session's: it goes where that said.
		if entries, _ := os.ReadDir(other); len(entries) > 0 {
			t.Errorf("the attaching server's own export folder got %d entries", len(entries))
		}
	}},
	{name: "the attaching server stops (SIGTERM) and the export folder cannot be written", ttl: 600, blocked: true, end: func(t *testing.T, r *handoffRun) {
		b := r.attach(t)
		// A signal rather than closing stdin, which would close its stderr.
		sendSignal(t, b, syscall.SIGTERM)
		b.waitExit(time.Minute)
		if !strings.Contains(b.logs.String(), "wink-mcp export --cache-dir "+r.cache+" --session "+r.handoff.Workspace) {
			t.Errorf("the attaching server's stderr does not say how to export the kept changes:\n%s", b.logs.String())
		}
	}},
	{name: "the attaching process killed with SIGKILL, then a new start", ttl: 600, end: func(t *testing.T, r *handoffRun) {
		b := r.attach(t)
		if err := b.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		b.waitExit(20 * time.Second)
		sweepWithNextServer(t, r.cache)
	}},
}

// handOver starts a stdio server with a mounted npm project and
// --export-on-exit, changes the project and hands the workspace over
// with a handle that works for ttl seconds.
func handOver(t *testing.T, ttl int, blocked bool) *handoffRun {
	t.Helper()
	r := &handoffRun{cache: t.TempDir()}
	r.root, r.folder = npmProject(t)
	r.exportDir = filepath.Join(t.TempDir(), "patches")
	if blocked {
		blocker := filepath.Join(t.TempDir(), "blocked")
		must(t, os.WriteFile(blocker, nil, 0o600))
		r.exportDir = filepath.Join(blocker, "patches")
	}
	r.mountArgs = []string{"--mount", r.folder, "--allowed-root", r.root}
	r.giver = start(t, startOptions{cache: r.cache, args: append([]string{"--export-on-exit", r.exportDir}, r.mountArgs...)})
	r.giver.run("sh", "-c", "cd proj && sed -i s/3000/8080/ src/index.js && printf 'export const routes = [];\\n' > src/routes.js")
	decodeStructured(t, r.giver.call("workspace_handoff", map[string]any{"expires_in_seconds": ttl}), &r.handoff)
	if r.handoff.Workspace == "" {
		t.Fatalf("the handoff made no kept workspace: %+v", r.handoff)
	}
	return r
}

// attach ends the giver, then starts another stdio process on the same
// cache and mounts, with args (no --export-on-exit unless they say),
// which attaches the workspace and makes a change of its own.
func (r *handoffRun) attach(t *testing.T, args ...string) *proc {
	t.Helper()
	r.giver.endSession()
	b := start(t, startOptions{cache: r.cache, args: append(args, r.mountArgs...)})
	decodeStructured(t, b.call("workspace_attach", map[string]any{"handle": r.handoff.Handle}), &tools.WorkspaceAttachResult{})
	b.run("sh", "-c", "printf 'export const b = 1;\\n' > proj/src/b.js")
	r.attached = true
	return b
}

// unblock lets the export folder be written.
func (r *handoffRun) unblock(t *testing.T) {
	t.Helper()
	must(t, os.Remove(filepath.Dir(r.exportDir)))
}

// keptForExport checks that the workspace whose export could not be
// written is still there, that `wink-mcp export` finds it and prints a
// patch that gives the change back, and reports whether it did.
func (r *handoffRun) keptForExport(t *testing.T) bool {
	t.Helper()
	if !fileExists(filepath.Join(r.cache, "workspaces", r.handoff.Workspace)) {
		t.Errorf("the workspace whose export could not be written was deleted")
		return false
	}
	cmd := exec.Command(winkBin, "export", "--cache-dir", r.cache, "--session", r.handoff.Workspace)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Errorf("wink-mcp export does not find the kept workspace: %v\n%s", err, stderr.String())
		return false
	}
	patch := filepath.Join(t.TempDir(), "proj.patch")
	must(t, os.WriteFile(patch, out, 0o600))
	return r.checkPatch(t, patch)
}

// checkPatch applies the patch to a clean copy of the folder and checks
// that it gives back every change made in the workspace.
func (r *handoffRun) checkPatch(t *testing.T, patchFile string) bool {
	t.Helper()
	patch, err := os.ReadFile(patchFile)
	must(t, err)
	dst := t.TempDir()
	if out, err := exec.Command("cp", "-a", r.folder+"/.", dst).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	apply := exec.Command("git", "apply", "-")
	apply.Dir, apply.Stdin = dst, bytes.NewReader(patch)
	if out, err := apply.CombinedOutput(); err != nil {
		t.Errorf("git apply %s: %v\n%s\n%s", patchFile, err, out, patch)
		return false
	}
	want := map[string]string{"src/index.js": indexEdited, "src/routes.js": "export const routes = [];\n"}
	if r.attached {
		want["src/b.js"] = "export const b = 1;\n"
	}
	ok := true
	for name, content := range want {
		if got, _ := os.ReadFile(filepath.Join(dst, name)); string(got) != content {
			t.Errorf("after git apply, %s holds %q, want %q", name, got, content)
			ok = false
		}
	}
	return ok
}

// handoffOutcome is what became of a handed-over workspace's change.
type handoffOutcome struct {
	exported, kept, lost bool
}

// checkHandoffOutcome finds the change in the export folder, written by
// the process that ended the workspace; when the folder could not be
// written, it checks that the workspace is kept for `wink-mcp export`,
// unblocks the folder and lets the next start export it. Once exported,
// the workspace must be gone.
func checkHandoffOutcome(t *testing.T, r *handoffRun, blocked bool) handoffOutcome {
	t.Helper()
	var o handoffOutcome
	if blocked {
		o.kept = r.keptForExport(t)
		r.unblock(t)
		sweepWithNextServer(t, r.cache)
	}
	patches, _ := exportedPatches(t, r.exportDir)
	if len(patches) != 1 || !r.checkPatch(t, patches[0]) {
		o.lost = true
		left, _ := os.ReadDir(filepath.Join(r.cache, "workspaces"))
		t.Errorf("the handed-over workspace's change is lost: patches %v, kept workspaces left %d", patches, len(left))
		return o
	}
	o.exported = !blocked
	if fileExists(filepath.Join(r.cache, "workspaces", r.handoff.Workspace)) {
		t.Errorf("the handed-over workspace outlived its export")
	}
	return o
}
