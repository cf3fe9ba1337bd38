package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/wink-mcp/wink-mcp/tools"
)

// roamingPods returns the Pods, not being deleted, of roaming workspaces
// (a handle's own workspace on Kubernetes) whose names begin with prefix,
// or of the roaming workspace named prefix, each with the owner lock of
// the server that holds it.
func roamingPods(t *testing.T, cs *kubernetes.Clientset, prefix string) (pods []corev1.Pod, locks []string) {
	t.Helper()
	list, err := cs.CoreV1().Pods(testNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Items {
		var labels map[string]string
		_ = json.Unmarshal([]byte(p.Annotations["io.wink-mcp/labels"]), &labels)
		if roams := labels["io.wink-mcp.roaming"]; roams != "" && (strings.HasPrefix(p.Name, prefix) || roams == prefix) && p.DeletionTimestamp == nil {
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

// roamingStores returns the names of the roaming workspaces' checkpoint
// stores in the shared checkpoint directory.
func roamingStores(t *testing.T, shared string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(shared, "kept"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "r") {
			names = append(names, e.Name())
		}
	}
	return names
}

// storeDeletions counts, by roaming workspace, the deletions of its
// checkpoint store the replicas logged.
func storeDeletions(replicas ...*replica) map[string]int {
	deleted := map[string]int{}
	for _, r := range replicas {
		for _, rec := range r.p.logs.records() {
			if rec["msg"] == "deleted the checkpoints of a roaming workspace that ended" {
				deleted[fmt.Sprint(rec["workspace"])]++
			}
		}
	}
	return deleted
}

// checkStoresDeletedOnce fails unless each of the stores was deleted,
// and logged deleted exactly once by the replicas, and no other store was
// deleted more than once.
func checkStoresDeletedOnce(t *testing.T, shared string, stores []string, replicas ...*replica) {
	t.Helper()
	if left := roamingStores(t, shared); len(left) != 0 {
		t.Errorf("roaming checkpoint stores left: %v", left)
	}
	deleted := storeDeletions(replicas...)
	for _, name := range stores {
		if deleted[name] != 1 {
			t.Errorf("the store of roaming workspace %s was deleted %d times, want once (all: %v)", name, deleted[name], deleted)
		}
	}
	for name, n := range deleted {
		if n > 1 {
			t.Errorf("the store of roaming workspace %s was deleted %d times", name, n)
		}
	}
}

// roamingNameOf is the roaming workspace a Pod holds.
func roamingNameOf(pod corev1.Pod) string {
	var labels map[string]string
	_ = json.Unmarshal([]byte(pod.Annotations["io.wink-mcp/labels"]), &labels)
	return labels["io.wink-mcp.roaming"]
}

// TestKubernetesRoamingHandle: a 2026-07-28 handle on a workspace that is
// not kept (no `name`), on two replicas (--engine kubernetes), is served
// by either: its record is on its Lease (digests only), and the replica
// asked adopts the Pod the other left, so a file written and a job
// started through A are there through B, on the same Pod. Another
// principal is refused on both, exactly as a handle never issued. A
// checkpoint taken through A is listed through B: the replicas share a
// --checkpoint-dir, where it is kept under the workspace's name. The
// holder SIGKILLed, the survivor keeps the Pod and serves the handle,
// the job still running; the survivor stopped (SIGTERM), it leaves the
// Pod for a third replica, which adopts it. Closed, its Pod, Lease and
// checkpoints go, the checkpoints deleted once. While the survivor waits
// after A's SIGKILL, B and C hand other roaming workspaces over
// (roamingHandoffs).
func TestKubernetesRoamingHandle(t *testing.T) {
	cs, _ := needCluster(t)
	base := "wr" + randomHex(4)
	tokenFile, other := twoTokens(t)
	shared := t.TempDir()
	// An egress allowlist, so that the workspace has egress to drop.
	egress := []string{"--checkpoint-dir", shared, "--egress", "localhost:1", "--egress", "localhost:2"}
	a := launchReplica(t, cs, base+"a", t.TempDir(), tokenFile, egress...)
	b := launchReplica(t, cs, base+"b", t.TempDir(), tokenFile, egress...)
	viaA, viaB := modernClient(t, a.p.url, testToken), modernClient(t, b.p.url, testToken)
	leasesBefore := len(roamingLeases(t, cs))

	handle := openHandle(t, viaA, map[string]any{})
	var shell tools.ShellResult
	structuredCall(t, viaA, "podman_shell", map[string]any{"workspace": handle, "command": []string{"sh", "-c", "echo from-a > moved.txt"}}, &shell)
	var cp tools.WorkspaceCheckpointResult
	structuredCall(t, viaA, "workspace_checkpoint", map[string]any{"workspace": handle, "message": "through A"}, &cp)
	var narrowed tools.WorkspaceEgressResult
	structuredCall(t, viaA, "workspace_egress", map[string]any{"workspace": handle, "action": "drop", "pattern": "localhost:2"}, &narrowed)
	structuredCall(t, viaA, "podman_shell", map[string]any{"workspace": handle, "background": true,
		"command": []string{"sh", "-c", "i=0; while :; do echo tick $i; i=$((i+1)); sleep 0.2; done"}}, &shell)
	job := shell.Job
	if job == "" || shell.JobState != "running" {
		t.Fatalf("the background job: %+v", shell)
	}
	first, lock := roamingPod(t, cs, base)
	mine := roamingNameOf(first)
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
	pod, lock := roamingPod(t, cs, mine)
	if pod.UID != first.UID || !ownedBy(lock, b) {
		t.Fatalf("after the move to B: Pod %s (UID %s, owner lock %s), want UID %s owned by B", pod.Name, pod.UID, lock, first.UID)
	}
	var list tools.WorkspaceCheckpointsResult
	structuredCall(t, viaB, "workspace_checkpoints", map[string]any{"workspace": handle}, &list)
	if len(list.Checkpoints) != 1 || list.Checkpoints[0].ID != cp.Checkpoint.ID || list.Checkpoints[0].Message != "through A" {
		t.Errorf("the checkpoints through B: %+v; want A's %s", list.Checkpoints, cp.Checkpoint.ID)
	}
	// What A took away from the workspace's egress stays away through B.
	structuredCall(t, viaB, "workspace_egress", map[string]any{"workspace": handle, "action": "list"}, &narrowed)
	for _, g := range narrowed.Grants {
		if g.Dropped != (g.Pattern == "localhost:2") {
			t.Errorf("the egress through B after A dropped localhost:2: %+v", narrowed.Grants)
		}
	}
	if stores := roamingStores(t, shared); len(stores) != 1 || stores[0] != roamingNameOf(pod) {
		t.Errorf("the shared checkpoint stores %v; want the workspace's %s", stores, roamingNameOf(pod))
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
	c := launchReplica(t, cs, base+"c", t.TempDir(), tokenFile, egress...)
	viaC := modernClient(t, c.p.url, testToken)
	if _, lock := roamingPod(t, cs, mine); !ownedBy(lock, a) {
		t.Fatalf("A does not hold the Pod before its SIGKILL (owner lock %s)", lock)
	}
	if err := a.p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	a.p.waitExit(10 * time.Second)
	// Meanwhile B and C hand other roaming workspaces over.
	handedStores := roamingHandoffs(t, cs, shared, b, c, other)
	// Past A's Lease (15 s) and a sweep (every 10 s) of B's before the
	// call: the sweep must have kept the Pod.
	time.Sleep(time.Until(killed.Add(30 * time.Second)))
	took := structuredCall(t, viaB, "job", map[string]any{"workspace": handle, "action": "output", "id": job}, &out)
	pod, lock = roamingPod(t, cs, mine)
	if pod.UID != first.UID || !ownedBy(lock, b) {
		t.Fatalf("after A's SIGKILL: Pod %s (UID %s, owner lock %s), want UID %s owned by B", pod.Name, pod.UID, lock, first.UID)
	}
	structuredCall(t, viaB, "job", map[string]any{"workspace": handle, "action": "status", "id": job}, &out)
	if out.Job == nil || out.Job.State != "running" {
		t.Fatalf("the job after A's SIGKILL, through B: %+v", out.Job)
	}
	t.Logf("first call through B after A's SIGKILL, %v later: %v (same Pod, job running)", time.Since(killed).Round(time.Second), took.Round(10*time.Millisecond))
	for _, rec := range b.p.logs.records() {
		if rec["event"] == "orphan_removed" {
			t.Errorf("B swept a container: %v", rec)
		}
	}

	// B stopped (SIGTERM): it leaves the Pod of the open handle running
	// and lets its Lease go; C adopts it on its next call.
	sendSignal(t, b.p, syscall.SIGTERM)
	b.p.waitExit(60 * time.Second)
	took = structuredCall(t, viaC, "job", map[string]any{"workspace": handle, "action": "status", "id": job}, &out)
	if out.Job == nil || out.Job.State != "running" {
		t.Fatalf("the job after B's shutdown, through C: %+v", out.Job)
	}
	if pod, lock := roamingPod(t, cs, mine); pod.UID != first.UID || !ownedBy(lock, c) {
		t.Fatalf("after B's shutdown: Pod %s (UID %s, owner lock %s), want UID %s owned by C", pod.Name, pod.UID, lock, first.UID)
	}
	t.Logf("first call through C after B's shutdown: %v (same Pod, job running)", took.Round(10*time.Millisecond))
	structuredCall(t, viaC, "workspace_checkpoints", map[string]any{"workspace": handle}, &list)
	if len(list.Checkpoints) != 1 || list.Checkpoints[0].ID != cp.Checkpoint.ID {
		t.Errorf("the checkpoints through C: %+v; want A's %s", list.Checkpoints, cp.Checkpoint.ID)
	}
	stores := roamingStores(t, shared)

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
	checkStoresDeletedOnce(t, shared, append(stores, handedStores...), a, b, c)
}

// TestKubernetesRoamingHandleIdle: with two replicas running and a short
// --idle-timeout, a roaming handle left idle after a move is removed once
// (its Pod, its Lease and its record), by the replica that held it, and a
// handle whose holder was SIGKILLed is removed by the survivor's sweep
// once idle, each with its checkpoints (in the shared --checkpoint-dir),
// deleted once: nothing is left, and the idle handle is refused. Then
// with no replica running (all SIGKILLed) a roaming workspace's Lease,
// Pod and checkpoints stay until a replica starts, and that replica's
// start-up sweep removes each, once.
func TestKubernetesRoamingHandleIdle(t *testing.T) {
	cs, _ := needCluster(t)
	base := "wi" + randomHex(4)
	tokenFile, _ := twoTokens(t)
	shared := t.TempDir()
	idle := []string{"--idle-timeout", "20s", "--checkpoint-dir", shared}
	a := launchReplica(t, cs, base+"a", t.TempDir(), tokenFile, idle...)
	b := launchReplica(t, cs, base+"b", t.TempDir(), tokenFile, idle...)
	c := launchReplica(t, cs, base+"c", t.TempDir(), tokenFile, idle...)
	viaA, viaB, viaC := modernClient(t, a.p.url, testToken), modernClient(t, b.p.url, testToken), modernClient(t, c.p.url, testToken)
	leasesBefore := len(roamingLeases(t, cs))

	var cp tools.WorkspaceCheckpointResult
	moved := openHandle(t, viaA, map[string]any{})
	structuredCall(t, viaA, "workspace_checkpoint", map[string]any{"workspace": moved}, &cp)
	if text, isError := callTool(t, viaB, "ls", map[string]any{"path": ".", "workspace": moved}); isError {
		t.Fatalf("the handle through B: %s", text)
	}
	if text, isError := callTool(t, viaB, "workspace_checkpoints", map[string]any{"workspace": moved}); isError || !strings.Contains(text, cp.Checkpoint.ID) {
		t.Fatalf("the handle's checkpoints through B: %s", text)
	}
	orphaned := openHandle(t, viaC, map[string]any{})
	structuredCall(t, viaC, "workspace_checkpoint", map[string]any{"workspace": orphaned}, &cp)
	stores := roamingStores(t, shared)
	if len(stores) != 2 {
		t.Fatalf("roaming checkpoint stores %v, want 2", stores)
	}
	if pods, _ := roamingPods(t, cs, base); len(pods) != 2 {
		t.Fatalf("%d roaming Pods, want 2", len(pods))
	}
	if err := c.p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	c.p.waitExit(10 * time.Second)

	killed, seen := time.Now(), ""
	waitUntil(t, 3*time.Minute, "the idle roaming workspaces' Pods, Leases and checkpoints to go", func() bool {
		pods, _ := roamingPods(t, cs, base)
		if now := fmt.Sprintf("Pods %d, Leases %d, stores %d", len(pods), len(roamingLeases(t, cs)), len(roamingStores(t, shared))); now != seen {
			seen = now
			t.Logf("%v after C's SIGKILL: %s", time.Since(killed).Round(time.Second), now)
		}
		return len(pods) == 0 && len(roamingLeases(t, cs)) == leasesBefore && len(roamingStores(t, shared)) == 0
	})
	checkStoresDeletedOnce(t, shared, stores, a, b)
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

	// No replica running: what a roaming workspace left waits for the
	// next replica, whose start-up sweep removes it once idle.
	left := openHandle(t, viaA, map[string]any{})
	structuredCall(t, viaA, "workspace_checkpoint", map[string]any{"workspace": left}, &cp)
	stores = roamingStores(t, shared)
	for _, r := range []*replica{a, b} {
		if err := r.p.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		r.p.waitExit(10 * time.Second)
	}
	time.Sleep(25 * time.Second) // past the holder's Lease (15 s) and the idle timeout (20 s)
	if pods, _ := roamingPods(t, cs, base); len(pods) != 1 || len(roamingLeases(t, cs)) != leasesBefore+1 || len(roamingStores(t, shared)) != 1 {
		t.Fatalf("with no replica running: %d Pods, Leases %v, stores %v; want each of the workspace left", len(pods), roamingLeases(t, cs), roamingStores(t, shared))
	}
	started := time.Now()
	d := launchReplica(t, cs, base+"d", t.TempDir(), tokenFile, idle...)
	waitUntil(t, 30*time.Second, "the next replica's start-up sweep to remove the idle workspace", func() bool {
		pods, _ := roamingPods(t, cs, base)
		return len(pods) == 0 && len(roamingLeases(t, cs)) == leasesBefore && len(roamingStores(t, shared)) == 0
	})
	t.Logf("the next replica's start-up sweep: everything gone %v after its start", time.Since(started).Round(time.Second))
	leases = 0
	for _, rec := range d.p.logs.records() {
		if rec["msg"] == "removed the Lease of a roaming workspace idle past its idle timeout" {
			leases++
		}
	}
	if leases != 1 {
		t.Errorf("the next replica logged %d Lease removals, want 1", leases)
	}
	checkStoresDeletedOnce(t, shared, stores, d)
}
