package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/wink-mcp/wink-mcp/tools"
)

// roamingPods returns the Pods, not being deleted, of roaming workspaces
// (a handle's own workspace on Kubernetes) whose names begin with prefix,
// each with the cache directory of the server that owns it.
func roamingPods(t *testing.T, cs *kubernetes.Clientset, prefix string) (pods []corev1.Pod, locks []string) {
	t.Helper()
	list, err := cs.CoreV1().Pods(testNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Items {
		var labels map[string]string
		_ = json.Unmarshal([]byte(p.Annotations["io.wink-mcp/labels"]), &labels)
		if labels["io.wink-mcp.roaming"] != "" && strings.HasPrefix(p.Name, prefix) && p.DeletionTimestamp == nil {
			pods, locks = append(pods, p), append(locks, labels["io.wink-mcp.lock"])
		}
	}
	return pods, locks
}

// roamingPod is the one Pod of roamingPods.
func roamingPod(t *testing.T, cs *kubernetes.Clientset, prefix string) (corev1.Pod, string) {
	t.Helper()
	pods, locks := roamingPods(t, cs, prefix)
	if len(pods) != 1 {
		t.Fatalf("%d Pods of roaming workspaces named %s*, want 1", len(pods), prefix)
	}
	return pods[0], locks[0]
}

// roamingLeases returns the names of the roaming workspaces' Leases.
func roamingLeases(t *testing.T, cs *kubernetes.Clientset) []string {
	t.Helper()
	list, err := cs.CoordinationV1().Leases(testNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: "io.wink-mcp.roaming=true"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range list.Items {
		names = append(names, l.Name)
	}
	return names
}

// TestKubernetesRoamingHandle: a 2026-07-28 handle on a workspace that is
// not kept (no `name`), on two replicas (--engine kubernetes), is served
// by either: its record is on its Lease (digests only), and the replica
// asked adopts the Pod the other left, so a file written and a job
// started through A are there through B, on the same Pod. Another
// principal is refused on both, exactly as a handle never issued. The
// holder SIGKILLed, the survivor keeps the Pod and serves the handle,
// the job still running; the survivor stopped (SIGTERM), it leaves the
// Pod for a third replica, which adopts it. Closed, its Pod and Lease go.
func TestKubernetesRoamingHandle(t *testing.T) {
	cs, _ := needCluster(t)
	base := "wr" + randomHex(4)
	tokenFile, other := twoTokens(t)
	a := launchReplica(t, cs, base+"a", t.TempDir(), tokenFile)
	b := launchReplica(t, cs, base+"b", t.TempDir(), tokenFile)
	viaA, viaB := modernClient(t, a.p.url, testToken), modernClient(t, b.p.url, testToken)
	leasesBefore := len(roamingLeases(t, cs))

	handle := openHandle(t, viaA, map[string]any{})
	var shell tools.ShellResult
	structuredCall(t, viaA, "podman_shell", map[string]any{"workspace": handle, "command": []string{"sh", "-c", "echo from-a > moved.txt"}}, &shell)
	structuredCall(t, viaA, "podman_shell", map[string]any{"workspace": handle, "background": true,
		"command": []string{"sh", "-c", "i=0; while :; do echo tick $i; i=$((i+1)); sleep 0.2; done"}}, &shell)
	job := shell.Job
	if job == "" || shell.JobState != "running" {
		t.Fatalf("the background job: %+v", shell)
	}
	first, lock := roamingPod(t, cs, base)
	if !ownedBy(lock, a) {
		t.Fatalf("the Pod's owner lock is %s, want under A's cache %s", lock, a.cache)
	}
	if leases := roamingLeases(t, cs); len(leases) != leasesBefore+1 {
		t.Fatalf("roaming Leases %v, want one more than the %d before", leases, leasesBefore)
	}

	var moves []time.Duration
	moves = append(moves, structuredCall(t, viaB, "podman_shell", map[string]any{"workspace": handle, "command": []string{"cat", "moved.txt"}}, &shell))
	if shell.Stdout != "from-a\n" {
		t.Errorf("the file written through A, read through B: %q", shell.Stdout)
	}
	pod, lock := roamingPod(t, cs, base)
	if pod.UID != first.UID || !ownedBy(lock, b) {
		t.Fatalf("after the move to B: Pod %s (UID %s, owner lock %s), want UID %s owned by B", pod.Name, pod.UID, lock, first.UID)
	}
	var out tools.JobResult
	structuredCall(t, viaB, "job", map[string]any{"workspace": handle, "action": "output", "id": job}, &out)
	seen := out.Total
	if !strings.Contains(out.Data, "tick 0\n") {
		t.Errorf("the job's output through B: %q", out.Data)
	}
	moves = append(moves, structuredCall(t, viaA, "job", map[string]any{"workspace": handle, "action": "output", "id": job}, &out))
	if out.Total <= seen {
		t.Errorf("the job's output did not grow across the moves: %d bytes, then %d", seen, out.Total)
	}
	checkChannelClosedFirst(t, a, b)
	t.Logf("calls that moved the roaming handle between replicas (same Pod each time): %v", moves)

	unknown, _ := callTool(t, modernClient(t, a.p.url, other), "ls", map[string]any{"path": ".", "workspace": "wsh_never-issued"})
	for _, r := range []*replica{a, b} {
		if text, isError := callTool(t, modernClient(t, r.p.url, other), "read_file", map[string]any{"file_path": "moved.txt", "workspace": handle}); !isError || text != unknown {
			t.Errorf("another principal on replica %s: %q, want exactly %q", r.prefix, text, unknown)
		}
	}

	// The holder (A, after the last move) SIGKILLed: B's sweep keeps its
	// Pod, and B's next call adopts it, the job still running.
	if _, lock := roamingPod(t, cs, base); !ownedBy(lock, a) {
		t.Fatalf("A does not hold the Pod before its SIGKILL (owner lock %s)", lock)
	}
	if err := a.p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	a.p.waitExit(10 * time.Second)
	// Past A's Lease (15 s) and a sweep (every 10 s) of B's before the
	// call: the sweep must have kept the Pod.
	time.Sleep(30 * time.Second)
	took := structuredCall(t, viaB, "job", map[string]any{"workspace": handle, "action": "output", "id": job}, &out)
	pod, lock = roamingPod(t, cs, base)
	if pod.UID != first.UID || !ownedBy(lock, b) {
		t.Fatalf("after A's SIGKILL: Pod %s (UID %s, owner lock %s), want UID %s owned by B", pod.Name, pod.UID, lock, first.UID)
	}
	structuredCall(t, viaB, "job", map[string]any{"workspace": handle, "action": "status", "id": job}, &out)
	if out.Job == nil || out.Job.State != "running" {
		t.Fatalf("the job after A's SIGKILL, through B: %+v", out.Job)
	}
	t.Logf("first call through B after A's SIGKILL, 30 s later: %v (same Pod, job running)", took.Round(10*time.Millisecond))
	for _, rec := range b.p.logs.records() {
		if rec["event"] == "orphan_removed" {
			t.Errorf("B swept a container: %v", rec)
		}
	}

	// B stopped (SIGTERM): it leaves the Pod of the open handle running
	// and lets its Lease go; C, started after, adopts it on its first call.
	c := launchReplica(t, cs, base+"c", t.TempDir(), tokenFile)
	viaC := modernClient(t, c.p.url, testToken)
	sendSignal(t, b.p, syscall.SIGTERM)
	b.p.waitExit(60 * time.Second)
	took = structuredCall(t, viaC, "job", map[string]any{"workspace": handle, "action": "status", "id": job}, &out)
	if out.Job == nil || out.Job.State != "running" {
		t.Fatalf("the job after B's shutdown, through C: %+v", out.Job)
	}
	if pod, lock := roamingPod(t, cs, base); pod.UID != first.UID || !ownedBy(lock, c) {
		t.Fatalf("after B's shutdown: Pod %s (UID %s, owner lock %s), want UID %s owned by C", pod.Name, pod.UID, lock, first.UID)
	}
	t.Logf("first call through C after B's shutdown: %v (same Pod, job running)", took.Round(10*time.Millisecond))

	if text, isError := callTool(t, viaC, "workspace_close", map[string]any{"workspace": handle}); isError {
		t.Fatalf("workspace_close: %s", text)
	}
	if text, _ := callTool(t, viaC, "ls", map[string]any{"path": ".", "workspace": handle}); text != unknown {
		t.Errorf("the closed handle: %q, want %q", text, unknown)
	}
	waitUntil(t, 60*time.Second, "the roaming workspace's Pod and Lease to go", func() bool {
		pods, _ := roamingPods(t, cs, base)
		return len(pods) == 0 && len(roamingLeases(t, cs)) == leasesBefore
	})
}

// TestKubernetesRoamingHandleIdle: with two replicas running and a short
// --idle-timeout, a roaming handle left idle after a move is removed once
// (its Pod, its Lease and its record), by the replica that held it, and a
// handle whose holder was SIGKILLed is removed by the survivor's sweep
// once idle: nothing is left, and the idle handle is refused.
func TestKubernetesRoamingHandleIdle(t *testing.T) {
	cs, _ := needCluster(t)
	base := "wi" + randomHex(4)
	tokenFile, _ := twoTokens(t)
	idle := []string{"--idle-timeout", "20s"}
	a := launchReplica(t, cs, base+"a", t.TempDir(), tokenFile, idle...)
	b := launchReplica(t, cs, base+"b", t.TempDir(), tokenFile, idle...)
	c := launchReplica(t, cs, base+"c", t.TempDir(), tokenFile, idle...)
	viaA, viaB, viaC := modernClient(t, a.p.url, testToken), modernClient(t, b.p.url, testToken), modernClient(t, c.p.url, testToken)
	leasesBefore := len(roamingLeases(t, cs))

	moved := openHandle(t, viaA, map[string]any{})
	callTool(t, viaA, "ls", map[string]any{"path": ".", "workspace": moved})
	if text, isError := callTool(t, viaB, "ls", map[string]any{"path": ".", "workspace": moved}); isError {
		t.Fatalf("the handle through B: %s", text)
	}
	orphaned := openHandle(t, viaC, map[string]any{})
	callTool(t, viaC, "ls", map[string]any{"path": ".", "workspace": orphaned})
	if pods, _ := roamingPods(t, cs, base); len(pods) != 2 {
		t.Fatalf("%d roaming Pods, want 2", len(pods))
	}
	if err := c.p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	c.p.waitExit(10 * time.Second)

	waitUntil(t, 3*time.Minute, "the idle roaming workspaces' Pods and Leases to go", func() bool {
		pods, _ := roamingPods(t, cs, base)
		return len(pods) == 0 && len(roamingLeases(t, cs)) == leasesBefore
	})
	// Each removal once: the moved handle's expiry by its holder, the
	// killed replica's Lease by one sweep (a delete on the version read);
	// its Pod by the sweeps (two racing both ask, the second finds it gone).
	expired, leases, pods := 0, 0, map[string]bool{}
	for _, r := range []*replica{a, b} {
		for _, rec := range r.p.logs.records() {
			switch {
			case rec["msg"] == "workspace handle expired":
				expired++
			case rec["msg"] == "removed the Lease of a roaming workspace idle past its idle timeout":
				leases++
			case rec["event"] == "orphan_removed":
				pods[fmt.Sprint(rec["container"])] = true
			}
		}
	}
	if expired != 1 || leases != 1 || len(pods) != 1 {
		t.Errorf("the live replicas logged %d expiries, %d Lease removals, Pods %v removed; want 1, 1 and the killed replica's one Pod", expired, leases, pods)
	}
	if text, isError := callTool(t, viaA, "ls", map[string]any{"path": ".", "workspace": moved}); !isError || !strings.Contains(text, "unknown workspace handle") {
		t.Errorf("the idle handle through A: %q, want unknown", text)
	}
}

// TestKubernetesRoamingHandoff: a roaming handle's workspace handed over
// (workspace_handoff) on replica A is taken with workspace_open's
// `handoff` on replica B: the handoff waits on the workspace's Lease
// (digests only), its Pod left running, and B finds the file and the
// running job on the same Pod. Another principal is refused on both; a
// second use is refused; handed over again, six takers on both replicas
// at once get it once. A handoff that expires untaken is refused, and its Pod and
// Lease go. Nothing is left after.
func TestKubernetesRoamingHandoff(t *testing.T) {
	cs, _ := needCluster(t)
	base := "wh" + randomHex(4)
	tokenFile, other := twoTokens(t)
	a := launchReplica(t, cs, base+"a", t.TempDir(), tokenFile)
	b := launchReplica(t, cs, base+"b", t.TempDir(), tokenFile)
	viaA := modernClient(t, a.p.url, testToken)
	leasesBefore := len(roamingLeases(t, cs))

	giver := openHandle(t, viaA, map[string]any{})
	var shell tools.ShellResult
	structuredCall(t, viaA, "podman_shell", map[string]any{"workspace": giver, "command": []string{"sh", "-c", "echo handed > handed.txt"}}, &shell)
	structuredCall(t, viaA, "podman_shell", map[string]any{"workspace": giver, "background": true,
		"command": []string{"sh", "-c", "i=0; while :; do echo tick $i; i=$((i+1)); sleep 0.2; done"}}, &shell)
	job := shell.Job
	first, _ := roamingPod(t, cs, base)
	var ho tools.WorkspaceHandoffResult
	structuredCall(t, viaA, "workspace_handoff", map[string]any{"workspace": giver}, &ho)
	if !ho.KeptContainer || len(ho.Handle) != 64 {
		t.Fatalf("workspace_handoff: %+v", ho)
	}
	for _, r := range []*replica{a, b} {
		if text, isError := callTool(t, modernClient(t, r.p.url, other), "workspace_open", map[string]any{"handoff": ho.Handle}); !isError {
			t.Errorf("another principal took the handoff on replica %s: %s", r.prefix, text)
		}
	}

	// Given on A, taken on B.
	viaB := modernClient(t, b.p.url, testToken)
	begin := time.Now()
	taker := openHandle(t, viaB, map[string]any{"handoff": ho.Handle})
	opened := time.Since(begin)
	took := structuredCall(t, viaB, "podman_shell", map[string]any{"workspace": taker, "command": []string{"cat", "handed.txt"}}, &shell)
	if shell.Stdout != "handed\n" {
		t.Errorf("the file handed over on A, through B: %q", shell.Stdout)
	}
	var out tools.JobResult
	structuredCall(t, viaB, "job", map[string]any{"workspace": taker, "action": "status", "id": job}, &out)
	if out.Job == nil || out.Job.State != "running" {
		t.Errorf("the job handed over on A, through B: %+v", out.Job)
	}
	if pod, lock := roamingPod(t, cs, base); pod.UID != first.UID || !ownedBy(lock, b) {
		t.Errorf("the taker's Pod %s (UID %s, owner %s), want UID %s owned by B", pod.Name, pod.UID, lock, first.UID)
	}
	t.Logf("handoff given on A, taken on B: workspace_open %v, first call %v (same Pod, job running)", opened.Round(10*time.Millisecond), took.Round(10*time.Millisecond))
	if text, isError := callTool(t, viaA, "workspace_open", map[string]any{"handoff": ho.Handle}); !isError {
		t.Errorf("the handoff used a second time: %s", text)
	}

	// Handed over again, on B: six takers on both replicas at once.
	structuredCall(t, viaB, "workspace_handoff", map[string]any{"workspace": taker}, &ho)
	type take struct {
		text    string
		isError bool
		via     *replica
	}
	takers := make([]*client.Client, 6)
	for i := range takers {
		takers[i] = modernClient(t, []*replica{a, b}[i%2].p.url, testToken)
	}
	results := make([]take, len(takers))
	var wg sync.WaitGroup
	for i, c := range takers {
		wg.Go(func() {
			text, isError := callTool(t, c, "workspace_open", map[string]any{"handoff": ho.Handle})
			results[i] = take{text: text, isError: isError, via: []*replica{a, b}[i%2]}
		})
	}
	wg.Wait()
	var won []take
	for _, r := range results {
		if !r.isError {
			won = append(won, r)
		} else if !strings.Contains(r.text, "not accepted") {
			t.Errorf("a refused taker: %q, want the handoff's one refusal", r.text)
		}
	}
	if len(won) != 1 {
		t.Fatalf("%d of %d racing takers got the handoff, want exactly 1: %+v", len(won), len(takers), results)
	}
	winner := won[0].text[strings.LastIndex(won[0].text, " ")+1:]
	viaWinner := modernClient(t, won[0].via.p.url, testToken)
	structuredCall(t, viaWinner, "podman_shell", map[string]any{"workspace": winner, "command": []string{"cat", "handed.txt"}}, &shell)
	if shell.Stdout != "handed\n" {
		t.Errorf("the file through the crowd's winner (replica %s): %q", won[0].via.prefix, shell.Stdout)
	}
	if pod, _ := roamingPod(t, cs, base); pod.UID != first.UID {
		t.Errorf("the winner's Pod UID %s, want %s", pod.UID, first.UID)
	}

	// A handoff that expires untaken: refused, its Pod and Lease go.
	short := openHandle(t, viaA, map[string]any{})
	structuredCall(t, viaA, "podman_shell", map[string]any{"workspace": short, "command": []string{"true"}}, &shell)
	structuredCall(t, viaA, "workspace_handoff", map[string]any{"workspace": short, "expires_in_seconds": 2}, &ho)
	time.Sleep(3 * time.Second)
	if text, isError := callTool(t, modernClient(t, b.p.url, testToken), "workspace_open", map[string]any{"handoff": ho.Handle}); !isError {
		t.Errorf("an expired handoff was taken: %s", text)
	}
	for h, c := range map[string]*client.Client{winner: viaWinner, taker: viaB, giver: viaA, short: viaA} {
		if text, isError := callTool(t, c, "workspace_close", map[string]any{"workspace": h}); isError {
			t.Errorf("workspace_close: %s", text)
		}
	}
	waitUntil(t, 60*time.Second, "the roaming workspaces' Pods and Leases to go", func() bool {
		pods, _ := roamingPods(t, cs, base)
		return len(pods) == 0 && len(roamingLeases(t, cs)) == leasesBefore
	})
}
