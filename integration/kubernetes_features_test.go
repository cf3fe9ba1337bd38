package integration

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/wink-mcp/wink-mcp/tools"
)

// The features of the Podman engine that go through the agent and the
// engine's exec streams, tried on the test node: checkpoints and
// restores, port previews, egress, and a handoff between two sessions of
// one server. Each test passes --allow-unenforced-network-policy
// (startKubernetes), which only allows: with an enforcer on the node, the
// same tests pass, as none of these needs the Pod network.

// TestKubernetesCheckpointRestore saves a workspace Pod's /workspace,
// holding every kind of entry, wrecks it, diffs and restores it: the
// Pod's view is what it was. Over stdio a handoff, which would put the files on this
// machine's disk for another process, is refused saying why.
func TestKubernetesCheckpointRestore(t *testing.T) {
	cs, _ := needCluster(t)
	prefix := "wk" + randomHex(4)
	p := startKubernetes(t, cs, prefix, "", "--warm", "0")
	if res := p.run("sh", "-c", plantWorkspace); res.ExitCode != 0 {
		t.Fatalf("planting: %s", res.Stderr)
	}
	want := p.listing()
	var cp tools.WorkspaceCheckpointResult
	decodeStructured(t, p.call("workspace_checkpoint", map[string]any{"message": "planted"}), &cp)
	if cp.Checkpoint.ID != "c1" || cp.Checkpoint.Files < 10 {
		t.Fatalf("checkpoint = %+v", cp)
	}
	if res := p.run("sh", "-c", "chmod -R u+w .; rm -rf ./* ./.wh*; printf other > new.txt"); res.ExitCode != 0 {
		t.Fatalf("wrecking: %s", res.Stderr)
	}
	if diff := textOf(p.call("workspace_checkpoint_diff", map[string]any{"from": "c1", "path": "src"})); !strings.Contains(diff, "deleted file mode 100755") || !strings.Contains(diff, "src/main.go") {
		t.Errorf("diff c1..now under src:\n%s", diff)
	}
	var r tools.WorkspaceRestoreResult
	decodeStructured(t, p.call("workspace_restore", map[string]any{"checkpoint": "c1"}), &r)
	if r.Before != "c2" || r.Written == 0 || r.Removed == 0 {
		t.Errorf("restore = %+v", r)
	}
	if got := p.listing(); got != want {
		t.Errorf("after the restore the workspace differs:\n%s", lineDiff(want, got))
	}
	res := p.call("workspace_handoff", map[string]any{"expires_in_seconds": 60})
	if msg := textOf(res); !res.IsError || !strings.Contains(msg, "--engine kubernetes") || !strings.Contains(msg, "over HTTP") {
		t.Errorf("a handoff over stdio: %s; want it refused naming --engine kubernetes and HTTP", msg)
	}
	p.endSession()
}

// TestKubernetesIdleKeepsFiles lets a session's Pod go for idleness, then
// replaces it with a profile switch: its /workspace, an emptyDir, goes
// with it each time, so the files are saved first and the next call finds
// them in the next Pod.
func TestKubernetesIdleKeepsFiles(t *testing.T) {
	cs, _ := needCluster(t)
	prefix := "wk" + randomHex(4)
	profiles, nonce := profilesFile(t, "profiles:\n  one-NONCE:\n    image: PY_IMAGE\n    env: {WHICH: one}\n")
	p := startKubernetes(t, cs, prefix, "", "--warm", "0", "--idle-timeout", "3s", "--profiles", profiles)
	if res := p.run("sh", "-c", "mkdir -p src && echo kept > src/f.txt && ln -s f.txt src/link"); res.ExitCode != 0 {
		t.Fatal(res.Stderr)
	}
	first := podsNamed(t, cs, prefix)
	p.waitLog(time.Minute, "workspace idle_cleanup", nil)
	if left := podsNamed(t, cs, prefix); len(left) != 0 {
		t.Errorf("after the idle clean-up Pods %v are left", left)
	}
	begin := time.Now()
	if got := p.run("cat", "src/link"); got.Stdout != "kept\n" {
		t.Errorf("after the idle clean-up src/link reads %+v; want the files back", got)
	}
	t.Logf("the first call after the idle clean-up, a new Pod and the files restored: %v", time.Since(begin).Round(time.Millisecond))
	p.waitLog(5*time.Second, "workspace restore finished", nil)
	now := podsNamed(t, cs, prefix)
	if len(now) != 1 || len(first) != 1 || now[0].UID == first[0].UID {
		t.Fatalf("Pods before %d, after %d; want a new one", len(first), len(now))
	}
	if res := p.useProfile("one-"+nonce, true); !res.Restarted {
		t.Errorf("workspace_profile with restart: %+v; want the Pod replaced", res)
	}
	if got := p.run("sh", "-c", "echo $WHICH; cat /workspace/src/link"); got.Stdout != "one\nkept\n" {
		t.Errorf("after the profile switch: %+v; want the profile's environment and the files back", got)
	}
	if after := podsNamed(t, cs, prefix); len(after) != 1 || after[0].UID == now[0].UID {
		t.Errorf("after the profile switch %d Pods; want one new one", len(after))
	}
	// A reset while the files wait for the next Pod empties the workspace.
	cleanups := p.logs.count("idle_cleanup")
	waitUntil(t, time.Minute, "a second idle clean-up", func() bool { return p.logs.count("idle_cleanup") > cleanups })
	p.call("podman_shell", map[string]any{"action": "stop"})
	if got := p.run("ls", "-A"); got.Stdout != "" {
		t.Errorf("after a reset of the idle workspace: %+v; want /workspace empty", got)
	}
	p.endSession()
}

// TestKubernetesEgress lets a workspace Pod reach one host through the
// egress proxy, which wink-mcp serves over the Pod's tunnel (an exec
// stream): the allowed host answers, another is refused naming --egress.
func TestKubernetesEgress(t *testing.T) {
	cs, _ := needCluster(t)
	prefix := "wk" + randomHex(4)
	allowed := httpServerOnLoopback(t, "allowed local server")
	other := httpServerOnLoopback(t, "another local server")
	p := startKubernetes(t, cs, prefix, "", "--warm", "0", "--egress", "localhost:"+allowed)
	get := func(port string) string {
		return rawProxy(t, p, "GET http://localhost:"+port+"/ HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
	}
	if out := get(allowed); !strings.Contains(out, " 200 ") || !strings.Contains(out, "allowed local server") {
		t.Errorf("the allowed host through the proxy: %q", out)
	}
	out := get(other)
	if !strings.Contains(out, "403") || strings.Contains(out, "another local server") || !strings.Contains(out, "--egress") {
		t.Errorf("a host --egress does not name: %q; want a 403 naming --egress", out)
	}
	t.Logf("a host --egress does not name: %q", out)
	p.endSession()
}

// TestKubernetesHandoffAndPorts serves streamable HTTP: a server a
// background job runs in the Pod is reached through the URL
// workspace_port gives; the workspace is handed over with a checkpoint,
// and another session attaches it with its Pod, its job and its port, and
// restores the checkpoint. The Pod goes with the attaching session, and a
// workspace nobody attaches goes when its handle expires.
func TestKubernetesHandoffAndPorts(t *testing.T) {
	cs, _ := needCluster(t)
	prefix := "wk" + randomHex(4)
	p := startKubernetesOver(t, "http", cs, prefix, "", "--warm", "0")
	url := openPort(t, p, 8000)
	if status, body := fetch(url); status != http.StatusBadGateway || !strings.Contains(body, "nothing answers on port 8000") {
		t.Errorf("before the server listens: %d %q; want a 502 page saying nothing answers", status, body)
	}
	if res := p.call("write_file", map[string]any{"file_path": "site/index.html", "content": "handed over\n"}); res.IsError {
		t.Fatal(textOf(res))
	}
	name := p.container()
	job := p.shell(map[string]any{"command": []string{"python3", "-m", "http.server", "8000", "--bind", "127.0.0.1", "--directory", "site"}, "background": true})
	answers := func() bool { status, body := fetch(url); return status == http.StatusOK && body == "handed over\n" }
	waitUntil(t, 10*time.Second, "the job's server in the Pod through the URL", answers)
	if res := p.call("workspace_checkpoint", map[string]any{"message": "served"}); res.IsError {
		t.Fatal(textOf(res))
	}
	var h tools.WorkspaceHandoffResult
	decodeStructured(t, p.call("workspace_handoff", map[string]any{"expires_in_seconds": 600}), &h)
	if !h.KeptContainer || !podExists(t, cs, prefix, name) || !answers() {
		t.Errorf("handed over: kept_container %v, Pod there %v, URL answers %v; want all while it waits for its attach", h.KeptContainer, podExists(t, cs, prefix, name), answers())
	}
	q := p.sibling(nil, "")
	var attached tools.WorkspaceAttachResult
	decodeStructured(t, q.call("workspace_attach", map[string]any{"handle": h.Handle}), &attached)
	if !attached.KeptContainer {
		t.Errorf("attach: %+v; want the Pod kept", attached)
	}
	if st := jobState(q, job.Job); st != "running" || !answers() {
		t.Errorf("after the attach: job %s, URL answers %v; want the job running and its URL open", st, answers())
	}
	if res := q.run("sh", "-c", "rm -r site"); res.ExitCode != 0 {
		t.Fatal(res.Stderr)
	}
	if res := q.call("workspace_restore", map[string]any{"checkpoint": "c1"}); res.IsError {
		t.Fatalf("restore: %s", textOf(res))
	}
	if got := q.run("cat", "site/index.html").Stdout; got != "handed over\n" {
		t.Errorf("after the restore site/index.html = %q", got)
	}
	q.endSession()
	waitUntil(t, time.Minute, "the attached workspace's Pod to go with its session", func() bool { return !podExists(t, cs, prefix, name) })

	fresh := p.container()
	if res := p.call("workspace_handoff", map[string]any{"expires_in_seconds": 1}); res.IsError {
		t.Fatal(textOf(res))
	}
	waitUntil(t, time.Minute, "a Pod nobody attached to go when its handle expires", func() bool { return !podExists(t, cs, prefix, fresh) })
}

// podExists reports whether the Pod name, one of prefix-..., is there.
func podExists(t *testing.T, cs *kubernetes.Clientset, prefix, name string) bool {
	t.Helper()
	for _, pod := range podsNamed(t, cs, prefix) {
		if pod.Name == name {
			return true
		}
	}
	return false
}
