package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/tools"
)

// sibling opens another session on the same HTTP or SSE server, with its
// own client, headers and query (such as "?workspace=NAME").
func (p *proc) sibling(headers map[string]string, query string) *proc {
	p.t.Helper()
	s := &proc{t: p.t, transport: p.transport, logs: p.logs, prefix: p.prefix, cache: p.cache, url: p.url + query, exited: p.exited}
	s.connect(headers)
	p.t.Cleanup(func() {
		if s.client != nil {
			s.client.Close()
		}
	})
	return s
}

// workspacesCLI runs `wink-mcp workspaces` on a cache directory.
func workspacesCLI(t *testing.T, cache string, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(winkBin, append([]string{"workspaces", "--cache-dir", cache}, args...)...).CombinedOutput()
	return string(out), err
}

// TestKeptWorkspaceOutlivesTheServer runs two stdio servers one after the
// other with the same --workspace, as Claude Desktop started twice would:
// the second finds the files, the mounted folder's changes and the
// checkpoints the first left, in a new container.
func TestKeptWorkspaceOutlivesTheServer(t *testing.T) {
	cache := t.TempDir()
	root, folder := project(t)
	args := []string{"--workspace", "proj-1", "--allowed-root", root, "--mount", folder}
	p := start(t, startOptions{cache: cache, args: args})
	first := p.container()
	p.run("sh", "-c", "echo notes > notes.txt && printf 'edited\\n' >> proj/README.md")
	decodeStructured(t, p.call("workspace_checkpoint", map[string]any{"message": "day one"}), &tools.WorkspaceCheckpointResult{})
	p.shell(map[string]any{"command": []string{"sleep", "300"}, "background": true})
	if out, err := workspacesCLI(t, cache, "rm", "proj-1"); err == nil || !strings.Contains(out, "owned by wink-mcp process") {
		t.Errorf("rm of a workspace in use = %v: %s", err, out)
	}
	p.endSession()
	if containerExists(t, first) {
		t.Error("the container outlived its session")
	}
	if out, err := workspacesCLI(t, cache, "list"); err != nil || !strings.Contains(out, "proj-1") || !strings.Contains(out, "free") {
		t.Errorf("workspaces list = %v: %s", err, out)
	}

	q := start(t, startOptions{cache: cache, args: args})
	if got := q.run("cat", "notes.txt").Stdout; got != "notes\n" {
		t.Errorf("notes.txt after the restart = %q", got)
	}
	if changes := textOf(q.call("workspace_changes", nil)); !strings.Contains(changes, "modified file") || !strings.Contains(changes, "proj/README.md") {
		t.Errorf("the mounted folder's changes after the restart:\n%s", changes)
	}
	if list := textOf(q.call("workspace_checkpoints", nil)); !strings.Contains(list, "day one") {
		t.Errorf("checkpoints after the restart:\n%s", list)
	}
	if jobs := textOf(q.call("job", map[string]any{"action": "list"})); strings.Contains(jobs, "sleep") {
		t.Errorf("a job outlived its container: %s", jobs)
	}
	if q.container() == first {
		t.Error("the restart reused the old container")
	}
	q.endSession()
	// A server with other mounts is refused, saying why.
	other := start(t, startOptions{cache: cache, args: []string{"--workspace", "proj-1"}})
	if res := other.call("ls", nil); !res.IsError || !strings.Contains(textOf(res), "was made with the mounts") {
		t.Errorf("another server's mounts = %s", textOf(res))
	}
	other.endSession()
	if out, err := workspacesCLI(t, cache, "show", "proj-1"); err != nil || !strings.Contains(out, "day one") || !strings.Contains(out, "state      free") {
		t.Errorf("show = %v: %s", err, out)
	}
	if out, err := workspacesCLI(t, cache, "prune", "--older-than", "1h"); err != nil || strings.Contains(out, "proj-1") {
		t.Errorf("prune of a workspace used just now = %v: %s", err, out)
	}
	if out, err := workspacesCLI(t, cache, "--dry-run", "prune", "--older-than", "1ns"); err != nil || !strings.Contains(out, "would remove proj-1") || !fileExists(filepath.Join(cache, "workspaces", "proj-1")) {
		t.Errorf("a dry-run prune = %v: %s", err, out)
	}
	if out, err := workspacesCLI(t, cache, "rm", "proj-1"); err != nil {
		t.Errorf("rm = %v: %s", err, out)
	}
	if fileExists(filepath.Join(cache, "workspaces", "proj-1")) {
		t.Error("rm left the workspace")
	}
	if out, err := workspacesCLI(t, cache, "rm", "../etc"); err == nil {
		t.Errorf("rm of a bad name succeeded: %s", out)
	}
}

// TestIdleCleanupCheckpointsFirst lets a session sit idle until its
// container goes: an automatic checkpoint holds what it had.
func TestIdleCleanupCheckpointsFirst(t *testing.T) {
	p := start(t, startOptions{args: []string{"--idle-timeout", "2s"}})
	p.run("sh", "-c", "echo before-hibernation > notes")
	p.waitLog(30*time.Second, "workspace idle_cleanup", nil)
	var list tools.WorkspaceCheckpointsResult
	decodeStructured(t, p.call("workspace_checkpoints", nil), &list)
	if len(list.Checkpoints) != 1 || list.Checkpoints[0].Auto != "idle" || list.Checkpoints[0].Files != 1 {
		t.Fatalf("checkpoints after the idle clean-up: %+v", list)
	}
	if got := p.run("cat", "notes").Stdout; got != "before-hibernation\n" {
		t.Errorf("notes after the idle clean-up = %q", got)
	}
}

// TestTwoProcessesRaceForOneWorkspace starts two stdio servers on one
// kept workspace at once: one owns it, the other is told who does, and
// gets it once the owner is gone.
func TestTwoProcessesRaceForOneWorkspace(t *testing.T) {
	cache := t.TempDir()
	args := []string{"--workspace", "contested"}
	var procs [2]*proc
	var wg sync.WaitGroup
	for i := range procs {
		wg.Go(func() { procs[i] = start(t, startOptions{cache: cache, args: args}) })
	}
	wg.Wait()
	results := [2]string{}
	errs := [2]bool{}
	for i, p := range procs {
		wg.Go(func() {
			res := p.call("podman_shell", map[string]any{"command": []string{"sh", "-c", "echo " + strconv.Itoa(i) + " >> owners"}})
			results[i], errs[i] = textOf(res), res.IsError
		})
	}
	wg.Wait()
	if errs[0] == errs[1] {
		t.Fatalf("both or neither owned the workspace: %q / %q", results[0], results[1])
	}
	owner, loser := procs[0], procs[1]
	if errs[0] {
		owner, loser = procs[1], procs[0]
	}
	msg := results[0] + results[1]
	if !strings.Contains(msg, "owned by wink-mcp process "+strconv.Itoa(owner.cmd.Process.Pid)) {
		t.Errorf("the refusal does not name the owner (pid %d): %s", owner.cmd.Process.Pid, msg)
	}
	owner.endSession()
	if got := loser.run("cat", "owners").Stdout; strings.Count(got, "\n") != 1 {
		t.Errorf("owners = %q, want the first owner's one line", got)
	}
}

// TestKilledOwnerIsRecovered kills the server owning a kept workspace
// with SIGKILL while a job runs: the next server takes the workspace over,
// removes the dead one's container, and finds the files.
func TestKilledOwnerIsRecovered(t *testing.T) {
	cache := t.TempDir()
	args := []string{"--workspace", "crashy"}
	p := start(t, startOptions{cache: cache, args: args})
	dead := p.container()
	p.run("sh", "-c", "echo survived > f")
	p.shell(map[string]any{"command": []string{"sleep", "300"}, "background": true})
	must(t, p.cmd.Process.Signal(syscall.SIGKILL))
	p.waitExit(10 * time.Second)
	q := start(t, startOptions{cache: cache, args: args})
	if got := q.run("cat", "f").Stdout; got != "survived\n" {
		t.Errorf("f after the crash = %q", got)
	}
	if containerExists(t, dead) {
		t.Error("the dead owner's container is still there")
	}
}

// TestHandoffOverStreamableHTTP is an orchestrator's flow: session A
// writes files and starts a job, hands the workspace over; session B
// attaches, finds both, edits, checkpoints and restores. Other clients
// never get it: the same answer for a used, a wrong, an expired and
// another principal's handle.
func TestHandoffOverStreamableHTTP(t *testing.T) {
	tokA, tokB := randomHex(16), randomHex(16)
	as := map[string]string{"Authorization": "Bearer " + tokA}
	bs := map[string]string{"Authorization": "Bearer " + tokB}
	a := start(t, startOptions{transport: "http", headers: as, args: []string{"--auth-token", tokA, "--auth-token", tokB}})
	a.run("sh", "-c", "mkdir -p src && echo 'plan: step 1' > src/plan.md")
	job := a.shell(map[string]any{"command": []string{"sh", "-c", "while true; do date >> ticks; sleep 1; done"}, "background": true})
	var h tools.WorkspaceHandoffResult
	decodeStructured(t, a.call("workspace_handoff", nil), &h)
	if len(h.Handle) != 64 || !h.KeptContainer {
		t.Fatalf("handoff = %+v", h)
	}
	if out := a.run("ls", "-A").Stdout; out != "" {
		t.Errorf("the giver's workspace after the handoff: %q", out)
	}
	other := a.sibling(bs, "")
	refused := "the handle is not accepted"
	if res := other.call("workspace_attach", map[string]any{"handle": h.Handle}); !strings.Contains(textOf(res), refused) {
		t.Errorf("another principal's attach = %s", textOf(res))
	}
	b := a.sibling(as, "")
	var att tools.WorkspaceAttachResult
	decodeStructured(t, b.call("workspace_attach", map[string]any{"handle": h.Handle}), &att)
	if !att.KeptContainer {
		t.Errorf("attach = %+v", att)
	}
	if got := b.run("cat", "src/plan.md").Stdout; got != "plan: step 1\n" {
		t.Errorf("plan.md after attaching = %q", got)
	}
	if status := textOf(b.call("job", map[string]any{"action": "status", "id": job.Job})); !strings.Contains(status, "running") {
		t.Errorf("the job after attaching: %s", status)
	}
	b.run("sh", "-c", "echo 'plan: step 2' > src/plan.md")
	decodeStructured(t, b.call("workspace_checkpoint", map[string]any{"message": "step 2"}), &tools.WorkspaceCheckpointResult{})
	b.run("sh", "-c", "rm -rf src")
	var r tools.WorkspaceRestoreResult
	decodeStructured(t, b.call("workspace_restore", map[string]any{"checkpoint": "c1"}), &r)
	if got := b.run("cat", "src/plan.md").Stdout; got != "plan: step 2\n" || r.StoppedJobs != 1 {
		t.Errorf("after the restore: plan.md = %q, stopped jobs %d", got, r.StoppedJobs)
	}
	for _, tc := range []struct{ name, handle string }{{"used", h.Handle}, {"wrong", randomHex(32)}} {
		c := a.sibling(as, "")
		if res := c.call("workspace_attach", map[string]any{"handle": tc.handle}); !strings.Contains(textOf(res), refused) {
			t.Errorf("a %s handle = %s", tc.name, textOf(res))
		}
	}
	var short tools.WorkspaceHandoffResult
	decodeStructured(t, b.call("workspace_handoff", map[string]any{"expires_in_seconds": 1}), &short)
	time.Sleep(2 * time.Second)
	if res := a.sibling(as, "").call("workspace_attach", map[string]any{"handle": short.Handle}); !strings.Contains(textOf(res), refused) {
		t.Errorf("an expired handle = %s", textOf(res))
	}
	// A kept workspace named in the URL has one owner at a time.
	d := a.sibling(as, "?workspace=team")
	d.run("sh", "-c", "echo d > who")
	e := a.sibling(as, "?workspace=team")
	if res := e.call("ls", nil); !res.IsError || !strings.Contains(textOf(res), "is owned by wink-mcp process") {
		t.Errorf("a second session on the kept workspace = %s", textOf(res))
	}
	if res := a.sibling(bs, "?workspace=team").call("ls", nil); !res.IsError {
		t.Errorf("another principal opened the kept workspace")
	}
}

// TestHandoffBetweenStdioProcesses hands a workspace from one stdio
// server to another process: files and checkpoints go over disk, and go
// with the session that attached them.
func TestHandoffBetweenStdioProcesses(t *testing.T) {
	cache := t.TempDir()
	a := start(t, startOptions{cache: cache})
	a.run("sh", "-c", "echo drafted > draft.txt")
	decodeStructured(t, a.call("workspace_checkpoint", map[string]any{"message": "draft"}), &tools.WorkspaceCheckpointResult{})
	var h tools.WorkspaceHandoffResult
	decodeStructured(t, a.call("workspace_handoff", nil), &h)
	if h.KeptContainer || h.Workspace == "" {
		t.Fatalf("handoff = %+v", h)
	}
	b := start(t, startOptions{cache: cache})
	var att tools.WorkspaceAttachResult
	decodeStructured(t, b.call("workspace_attach", map[string]any{"handle": h.Handle}), &att)
	if got := b.run("cat", "draft.txt").Stdout; got != "drafted\n" {
		t.Errorf("draft.txt in the other process = %q", got)
	}
	if list := textOf(b.call("workspace_checkpoints", nil)); !strings.Contains(list, "draft") {
		t.Errorf("checkpoints in the other process:\n%s", list)
	}
	c := start(t, startOptions{cache: cache})
	if res := c.call("workspace_attach", map[string]any{"handle": h.Handle}); !strings.Contains(textOf(res), "the handle is not accepted") {
		t.Errorf("a used handle = %s", textOf(res))
	}
	if entries, _ := os.ReadDir(filepath.Join(cache, "handoffs")); len(entries) != 0 {
		t.Errorf("handle files left: %d", len(entries))
	}
	// A handed-over workspace is still a session's own: it goes with the
	// session that attached it.
	b.endSession()
	if entries, _ := os.ReadDir(filepath.Join(cache, "workspaces")); len(entries) != 0 {
		t.Errorf("the handed-over workspace outlived the session that attached it: %d left", len(entries))
	}
}
