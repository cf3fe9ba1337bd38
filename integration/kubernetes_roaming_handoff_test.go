package integration

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/wink-mcp/wink-mcp/tools"
)

// roamingHandoffs runs on two replicas of TestKubernetesRoamingHandle
// (a gives, b takes): a roaming handle's workspace handed over
// (workspace_handoff) on a is taken with workspace_open's `handoff` on b:
// the handoff waits on the workspace's Lease (digests only), its Pod left
// running, and b finds the file and the running job on the same Pod, and
// the checkpoint taken on a (the replicas share a --checkpoint-dir),
// which it restores. A take that fails after the handoff was taken (the
// store cannot be locked: a fault) gives the handoff back, and it is
// taken after. Another principal is refused on both; a second use is
// refused; handed over again, six takers on both replicas at once get it
// once. A handoff that expires untaken is refused. The giver's handle
// goes on with a fresh workspace that is roaming too: served through b.
// Every handle is closed; it returns the checkpoint stores there were,
// which the caller checks are each deleted once.
func roamingHandoffs(t *testing.T, cs *kubernetes.Clientset, shared string, a, b *replica, other string) []string {
	viaA := modernClient(t, a.p.url, testToken)
	known := roamingStores(t, shared)

	giver := openHandle(t, viaA, map[string]any{})
	var shell tools.ShellResult
	structuredCall(t, viaA, "podman_shell", map[string]any{"workspace": giver, "command": []string{"sh", "-c", "echo handed > handed.txt"}}, &shell)
	structuredCall(t, viaA, "podman_shell", map[string]any{"workspace": giver, "background": true,
		"command": []string{"sh", "-c", "i=0; while :; do echo tick $i; i=$((i+1)); sleep 0.2; done"}}, &shell)
	job := shell.Job
	var first corev1.Pod
	for _, name := range roamingStores(t, shared) {
		if !slices.Contains(known, name) {
			first, _ = roamingPod(t, cs, name)
		}
	}
	given := roamingNameOf(first)
	var cp tools.WorkspaceCheckpointResult
	structuredCall(t, viaA, "workspace_checkpoint", map[string]any{"workspace": giver, "message": "before the handoff"}, &cp)
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

	// A fault after the take: the workspace's checkpoint store cannot be
	// locked (its lock file a link, which is never followed). B's take
	// fails, and gives the handoff back.
	viaB := modernClient(t, b.p.url, testToken)
	lockFile := filepath.Join(shared, "kept", roamingNameOf(first), "owner.lock")
	if err := os.Rename(lockFile, lockFile+".aside"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/null", lockFile); err != nil {
		t.Fatal(err)
	}
	text, isError := callTool(t, viaB, "workspace_open", map[string]any{"handoff": ho.Handle})
	if err := os.Rename(lockFile+".aside", lockFile); err != nil {
		t.Fatal(err)
	}
	if !isError || !strings.Contains(text, "given back") {
		t.Fatalf("a take whose store cannot be locked: %q; want an error saying the handoff was given back", text)
	}

	// Given on A, taken on B.
	begin := time.Now()
	taker := openHandle(t, viaB, map[string]any{"handoff": ho.Handle})
	opened := time.Since(begin)
	took := structuredCall(t, viaB, "podman_shell", map[string]any{"workspace": taker, "command": []string{"cat", "handed.txt"}}, &shell)
	if shell.Stdout != "handed\n" {
		t.Errorf("the file handed over, through the taker's replica: %q", shell.Stdout)
	}
	var out tools.JobResult
	structuredCall(t, viaB, "job", map[string]any{"workspace": taker, "action": "status", "id": job}, &out)
	if out.Job == nil || out.Job.State != "running" {
		t.Errorf("the job handed over, through the taker's replica: %+v", out.Job)
	}
	if pod, lock := roamingPod(t, cs, given); pod.UID != first.UID || !ownedBy(lock, b) {
		t.Errorf("the taker's Pod %s (UID %s, owner %s), want UID %s owned by the taker's replica", pod.Name, pod.UID, lock, first.UID)
	}
	t.Logf("handoff given on one replica, taken on another: workspace_open %v, first call %v (same Pod, job running)", opened.Round(10*time.Millisecond), took.Round(10*time.Millisecond))
	var list tools.WorkspaceCheckpointsResult
	structuredCall(t, viaB, "workspace_checkpoints", map[string]any{"workspace": taker}, &list)
	if len(list.Checkpoints) != 1 || list.Checkpoints[0].Message != "before the handoff" {
		t.Fatalf("the checkpoints handed over, through the taker's replica: %+v", list.Checkpoints)
	}
	structuredCall(t, viaB, "podman_shell", map[string]any{"workspace": taker, "command": []string{"sh", "-c", "echo changed > handed.txt"}}, &shell)
	structuredCall(t, viaB, "workspace_restore", map[string]any{"workspace": taker, "checkpoint": cp.Checkpoint.ID}, &tools.WorkspaceRestoreResult{})
	structuredCall(t, viaB, "podman_shell", map[string]any{"workspace": taker, "command": []string{"cat", "handed.txt"}}, &shell)
	if shell.Stdout != "handed\n" {
		t.Errorf("handed.txt after restoring, through the taker's replica, the checkpoint taken on the giver's: %q", shell.Stdout)
	}
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
	if pod, _ := roamingPod(t, cs, given); pod.UID != first.UID {
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
	// The giver's handle goes on with a fresh workspace, roaming too.
	if text, isError := callTool(t, viaB, "podman_shell", map[string]any{"workspace": giver, "command": []string{"ls", "-A"}}); isError || strings.Contains(text, "handed.txt") {
		t.Errorf("the giver's handle after its handoff, through the taker's replica: %q; want its fresh, empty workspace", text)
	}
	stores := roamingStores(t, shared)
	for h, c := range map[string]*client.Client{winner: viaWinner, taker: viaB, giver: viaB, short: viaA} {
		if text, isError := callTool(t, c, "workspace_close", map[string]any{"workspace": h}); isError {
			t.Errorf("workspace_close: %s", text)
		}
	}
	return stores
}
