package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/wink-mcp/wink-mcp/tools"
)

// keptPod returns the one Pod, not being deleted, that works on the kept
// workspace name (its labels annotation names it), and the cache
// directory of the server whose labels it carries (from its lock label).
func keptPod(t *testing.T, cs *kubernetes.Clientset, name string) (corev1.Pod, string) {
	t.Helper()
	list, err := cs.CoreV1().Pods(testNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var found []corev1.Pod
	for _, p := range list.Items {
		var labels map[string]string
		_ = json.Unmarshal([]byte(p.Annotations["io.wink-mcp/labels"]), &labels)
		if labels["io.wink-mcp.workspace"] == name && p.DeletionTimestamp == nil {
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d Pods work on kept workspace %s, want 1", len(found), name)
	}
	var labels map[string]string
	_ = json.Unmarshal([]byte(found[0].Annotations["io.wink-mcp/labels"]), &labels)
	return found[0], labels["io.wink-mcp.lock"]
}

// ownedBy reports whether a lock label lies under replica r's cache.
func ownedBy(lock string, r *replica) bool { return strings.HasPrefix(lock, r.cache+"/") }

// structuredCall calls a tool on c, failing on an error, and decodes its
// structured result into out; it returns how long the call took.
func structuredCall(t *testing.T, c *client.Client, name string, args map[string]any, out any) time.Duration {
	t.Helper()
	var req mcp.CallToolRequest
	req.Params.Name, req.Params.Arguments = name, args
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	begin := time.Now()
	res, err := c.CallTool(ctx, req)
	took := time.Since(begin)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("%s %v: %s", name, args, textOf(res))
	}
	decodeStructured(t, res, out)
	return took
}

// TestKubernetesHandleMovesKeepThePod: a 2026-07-28 handle on a kept
// workspace, served in turn by two replicas (--engine kubernetes), moves
// between them on the same Pod (same UID): the replica that takes it over
// adopts the Pod the other left running (relabels it as its own, opens its
// own channel), so a file written through A is read through B, a
// background job started through A is still running, its output growing,
// read through B, and a server A started still answers on its port. Round robin through a real HAProxy serves every call on
// that one Pod. Another principal is refused on both. The holder
// SIGKILLed, the survivor's sweep keeps the Pod and its next call adopts
// it, the job still running. Closed, the Pod goes.
func TestKubernetesHandleMovesKeepThePod(t *testing.T) {
	cs, _ := needCluster(t)
	base := "wa" + randomHex(4)
	name := "ha" + randomHex(4)
	keptWorkspaceObjects(t, cs, name)
	tokenFile, other := twoTokens(t)
	a := launchReplica(t, cs, base+"a", t.TempDir(), tokenFile)
	b := launchReplica(t, cs, base+"b", t.TempDir(), tokenFile)
	viaA, viaB := modernClient(t, a.p.url, testToken), modernClient(t, b.p.url, testToken)

	handle := openHandle(t, viaA, map[string]any{"name": name})
	var shell tools.ShellResult
	structuredCall(t, viaA, "podman_shell", map[string]any{"workspace": handle, "command": []string{"sh", "-c", "echo from-a > moved.txt"}}, &shell)
	structuredCall(t, viaA, "podman_shell", map[string]any{"workspace": handle, "background": true,
		"command": []string{"sh", "-c", "i=0; while :; do echo tick $i; i=$((i+1)); sleep 0.2; done"}}, &shell)
	job := shell.Job
	if job == "" || shell.JobState != "running" {
		t.Fatalf("the background job: %+v", shell)
	}
	structuredCall(t, viaA, "podman_shell", map[string]any{"workspace": handle, "background": true,
		"command": []string{"python3", "-m", "http.server", "8765", "--bind", "127.0.0.1"}}, &shell)
	if shell.Job == "" || shell.JobState != "running" {
		t.Fatalf("the listening job: %+v", shell)
	}
	first, lock := keptPod(t, cs, name)
	if !ownedBy(lock, a) {
		t.Fatalf("the Pod's owner lock is %s, want under A's cache %s", lock, a.cache)
	}

	var moves []time.Duration
	took := structuredCall(t, viaB, "podman_shell", map[string]any{"workspace": handle, "command": []string{"cat", "moved.txt"}}, &shell)
	moves = append(moves, took)
	if shell.Stdout != "from-a\n" {
		t.Errorf("the file written through A, read through B: %q", shell.Stdout)
	}
	pod, lock := keptPod(t, cs, name)
	if pod.UID != first.UID || !ownedBy(lock, b) {
		t.Fatalf("after the move to B: Pod %s (UID %s, owner lock %s), want Pod %s (UID %s) owned by B", pod.Name, pod.UID, lock, first.Name, first.UID)
	}
	// The server A started still listens, reached from B's channel.
	fetch := "import urllib.request,time\nfor i in range(50):\n  try:\n    print(urllib.request.urlopen('http://127.0.0.1:8765/moved.txt').read().decode(),end='');break\n  except OSError: time.sleep(0.1)"
	structuredCall(t, viaB, "podman_shell", map[string]any{"workspace": handle, "command": []string{"python3", "-c", fetch}}, &shell)
	if shell.Stdout != "from-a\n" {
		t.Errorf("the port A's job listens on, from B: %q (stderr %q)", shell.Stdout, shell.Stderr)
	}
	var out tools.JobResult
	structuredCall(t, viaB, "job", map[string]any{"workspace": handle, "action": "status", "id": job}, &out)
	if out.Job == nil || out.Job.State != "running" {
		t.Fatalf("the job started through A, seen through B: %+v", out.Job)
	}
	structuredCall(t, viaB, "job", map[string]any{"workspace": handle, "action": "output", "id": job}, &out)
	seen := out.Total
	if !strings.Contains(out.Data, "tick 0\n") {
		t.Errorf("the job's output through B: %q", out.Data)
	}

	took = structuredCall(t, viaA, "job", map[string]any{"workspace": handle, "action": "output", "id": job}, &out)
	moves = append(moves, took)
	if out.Total <= seen {
		t.Errorf("the job's output did not grow across the moves: %d bytes, then %d", seen, out.Total)
	}

	roundRobin := startHAProxy(t, a, b)
	alice := modernClient(t, roundRobin, testToken)
	for i := range 6 {
		took := structuredCall(t, alice, "podman_shell", map[string]any{"workspace": handle, "command": []string{"cat", "moved.txt"}}, &shell)
		moves = append(moves, took)
		if shell.Stdout != "from-a\n" {
			t.Errorf("round robin call %d: %q", i, shell.Stdout)
		}
	}
	if pod, _ := keptPod(t, cs, name); pod.UID != first.UID {
		t.Errorf("after round robin the workspace is on Pod UID %s, want %s", pod.UID, first.UID)
	}
	checkChannelClosedFirst(t, a, b)
	t.Logf("calls that moved or may have moved the handle between replicas (same Pod each time): %v", moves)

	unknown, _ := callTool(t, modernClient(t, a.p.url, other), "ls", map[string]any{"path": ".", "workspace": "wsh_never-issued"})
	for _, r := range []*replica{a, b} {
		if text, isError := callTool(t, modernClient(t, r.p.url, other), "read_file", map[string]any{"file_path": "moved.txt", "workspace": handle}); !isError || text != unknown {
			t.Errorf("another principal on replica %s: %q, want exactly %q", r.prefix, text, unknown)
		}
	}

	// The holder SIGKILLed: the survivor's sweep keeps its Pod, and the
	// next call through the survivor adopts it, job still running.
	_, lock = keptPod(t, cs, name)
	dead, survivor, viaDead, viaSurvivor := a, b, viaA, viaB
	if ownedBy(lock, b) {
		dead, survivor, viaDead, viaSurvivor = b, a, viaB, viaA
	}
	structuredCall(t, viaDead, "job", map[string]any{"workspace": handle, "action": "output", "id": job}, &out)
	before := out.Total
	if err := dead.p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	dead.p.waitExit(10 * time.Second)
	if _, lock := keptPod(t, cs, name); !ownedBy(lock, dead) {
		t.Fatalf("the killed replica did not hold the Pod (owner lock %s)", lock)
	}
	// Past the dead replica's Lease (15 s) and a sweep (every 10 s) of the
	// survivor, before the call: the sweep must have kept the Pod.
	time.Sleep(30 * time.Second)
	took = structuredCall(t, viaSurvivor, "job", map[string]any{"workspace": handle, "action": "status", "id": job}, &out)
	if out.Job == nil || out.Job.State != "running" {
		t.Fatalf("the job after its replica's SIGKILL, through the survivor: %+v", out.Job)
	}
	pod, lock = keptPod(t, cs, name)
	if pod.UID != first.UID || !ownedBy(lock, survivor) {
		t.Fatalf("after the holder's SIGKILL: Pod %s (UID %s, owner lock %s), want Pod UID %s owned by the survivor", pod.Name, pod.UID, lock, first.UID)
	}
	structuredCall(t, viaSurvivor, "job", map[string]any{"workspace": handle, "action": "output", "id": job}, &out)
	if out.Total <= before {
		t.Errorf("the job's output did not grow across the SIGKILL: %d bytes, then %d", before, out.Total)
	}
	t.Logf("first call after SIGKILL of the holding replica, 30 s later: %v (same Pod, job running)", took.Round(10*time.Millisecond))
	for _, rec := range survivor.p.logs.records() {
		if rec["event"] == "orphan_removed" {
			t.Errorf("the survivor swept a container: %v", rec)
		}
	}

	if text, isError := callTool(t, viaSurvivor, "workspace_close", map[string]any{"workspace": handle}); isError {
		t.Fatalf("workspace_close: %s", text)
	}
	waitUntil(t, 60*time.Second, "the workspace's Pod to go", func() bool {
		_, err := cs.CoreV1().Pods(testNamespace).Get(context.Background(), first.Name, metav1.GetOptions{})
		return err != nil
	})
}

// moveEvent is a replica's leaving of the workspace's Pod, or its
// adoption of it, from its log.
type moveEvent struct {
	at      time.Time
	replica string
	adopted bool
}

// checkChannelClosedFirst checks, from the replicas' logs, that each
// adoption began after the other replica had closed its channel and left
// the Pod (so no two servers drove the agent at once), and that there
// were at least two.
func checkChannelClosedFirst(t *testing.T, replicas ...*replica) {
	t.Helper()
	var events []moveEvent
	for _, r := range replicas {
		for _, rec := range r.p.logs.records() {
			at, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(rec["time"]))
			switch rec["event"] {
			case "left_for_adoption":
				events = append(events, moveEvent{at: at, replica: r.prefix})
			case "adopted":
				took, _ := rec["duration_ms"].(float64)
				events = append(events, moveEvent{at: at.Add(-time.Duration(took) * time.Millisecond), replica: r.prefix, adopted: true})
			}
		}
	}
	slices.SortFunc(events, func(x, y moveEvent) int { return x.at.Compare(y.at) })
	adoptions := 0
	for i, ev := range events {
		if !ev.adopted {
			continue
		}
		adoptions++
		if i == 0 || events[i-1].adopted || events[i-1].replica == ev.replica {
			t.Errorf("replica %s adopted the Pod at %s without the other leaving it first: %+v", ev.replica, ev.at.Format(time.RFC3339Nano), events)
		}
	}
	if adoptions < 2 {
		t.Errorf("%d adoptions logged, want at least 2: %+v", adoptions, events)
	}
}
