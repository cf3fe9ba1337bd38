package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// handlesRun is what tsclient/handles.mjs prints.
type handlesRun struct {
	OpenError string
	Handle    string
	Rounds    []struct {
		IsError bool
		Text    string
		Stdout  string
	}
	Ms []int
}

// runHandlesClient runs tsclient/handles.mjs: the TypeScript SDK v2,
// pinned to 2026-07-28, opens the kept workspace name through url and
// makes rounds rounds of calls on its handle.
func runHandlesClient(t *testing.T, url, token, name string, rounds int) handlesRun {
	t.Helper()
	if _, err := os.Stat(filepath.Join("tsclient", "node_modules", "@modelcontextprotocol", "client")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the TypeScript SDK v2 client is not installed (run make setup): %v", err)
		}
		t.Skip("the TypeScript SDK v2 client is not installed; run make setup")
	}
	cmd := exec.Command("node", filepath.Join("tsclient", "handles.mjs"), url, token, name, fmt.Sprint(rounds))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("handles.mjs: %v\n%s", err, out)
	}
	var run handlesRun
	if err := json.Unmarshal(out, &run); err != nil {
		t.Fatalf("handles.mjs printed %q: %v", out, err)
	}
	return run
}

// servedHandles counts the calls on handles a replica opened or adopted.
func servedHandles(r *replica) int {
	n := 0
	for _, rec := range r.p.logs.records() {
		if rec["msg"] == "workspace handle opened" || rec["msg"] == "workspace handle adopted from its record" {
			n++
		}
	}
	return n
}

// holderOf returns the replica whose labels the kept workspace name's
// Pod carries: the one that serves it now (a Pod is adopted, so its name
// says only which replica made it).
func holderOf(t *testing.T, cs *kubernetes.Clientset, name string, replicas ...*replica) *replica {
	t.Helper()
	var holder *replica
	waitUntil(t, 30*time.Second, "one replica to hold the workspace's Pod", func() bool {
		_, lock := keptPod(t, cs, name)
		for _, r := range replicas {
			if ownedBy(lock, r) {
				holder = r
			}
		}
		return holder != nil
	})
	return holder
}

// callRetryingOnce calls a tool, and again after a second when the first
// attempt fails below MCP (the proxy sent it to a replica just killed, on
// a connection it held open: a POST is not retried by the proxy once sent),
// as a client does; it reports whether it retried.
func callRetryingOnce(t *testing.T, c *client.Client, name string, args map[string]any) (*mcp.CallToolResult, bool) {
	t.Helper()
	var req mcp.CallToolRequest
	req.Params.Name, req.Params.Arguments = name, args
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		res, err := c.CallTool(ctx, req)
		cancel()
		if err == nil {
			return res, attempt > 0
		}
		if attempt > 0 {
			t.Fatalf("%s, retried: %v", name, err)
		}
		t.Logf("%s failed below MCP (%v); retrying once", name, err)
		time.Sleep(time.Second)
	}
}

// TestKubernetesHandlesAcrossReplicas serves 2026-07-28 handles on a kept
// workspace from two replicas (--engine kubernetes, their own cache
// directories) behind a real HAProxy:
//   - round robin: the TypeScript SDK v2 client's calls on one handle land
//     on both replicas, each taking the workspace from the other (its
//     Lease asked for, let go between calls, its Pod adopted), and all see the same files;
//   - another principal's use of the handle reads exactly as a handle
//     never issued, on either replica;
//   - balanced as docs/kubernetes.md says (a hash of Mcp-Param-Workspace),
//     the handle's calls stay on one replica;
//   - that replica SIGKILLed, the next call succeeds on the survivor;
//   - the survivor stopped and a new server started (a restart), the handle
//     still works there; closed there, it is refused and its record gone.
func TestKubernetesHandlesAcrossReplicas(t *testing.T) {
	cs, _ := needCluster(t)
	base := "wh" + randomHex(4)
	name := "hk" + randomHex(4)
	object := keptWorkspaceObjects(t, cs, name)
	tokenFile, other := twoTokens(t)
	replicas := []*replica{
		launchReplica(t, cs, base+"a", t.TempDir(), tokenFile),
		launchReplica(t, cs, base+"b", t.TempDir(), tokenFile),
	}
	roundRobin := startHAProxy(t, replicas...)

	const rounds = 4
	run := runHandlesClient(t, roundRobin, testToken, name, rounds)
	if run.OpenError != "" || len(run.Rounds) != rounds {
		t.Fatalf("the TypeScript client through round robin: %+v", run)
	}
	want := ""
	for i, r := range run.Rounds {
		want += fmt.Sprintf("round %d\n", i)
		if r.IsError || r.Stdout != want {
			t.Errorf("round %d: %+v; want every file so far", i, r)
		}
	}
	handle := run.Handle
	for _, r := range replicas {
		if servedHandles(r) == 0 {
			t.Errorf("replica %s served no call on the handle", r.prefix)
		}
	}
	t.Logf("round robin: %d rounds of two calls, each round %v ms (a move between replicas waits for the Lease, then adopts the Pod)", rounds, run.Ms)

	bob := modernClient(t, roundRobin, other)
	unknown, _ := callTool(t, bob, "ls", map[string]any{"path": ".", "workspace": "wsh_never-issued"})
	for _, r := range replicas {
		direct := modernClient(t, r.p.url, other)
		if text, isError := callTool(t, direct, "read_file", map[string]any{"file_path": "round-0.txt", "workspace": handle}); !isError || text != unknown {
			t.Errorf("another principal on replica %s: %q, want exactly %q", r.prefix, text, unknown)
		}
	}

	hashed := startHAProxyBalancing(t, documentedBalance, replicas...)
	alice := modernClient(t, hashed, testToken)
	before := []int{servedHandles(replicas[0]), servedHandles(replicas[1])}
	for i := range 4 {
		if text, isError := callTool(t, alice, "read_file", map[string]any{"file_path": "round-0.txt", "workspace": handle}); isError || !strings.Contains(text, "round 0") {
			t.Fatalf("call %d through the hashing proxy: %s", i, text)
		}
	}
	if moves := servedHandles(replicas[0]) + servedHandles(replicas[1]) - before[0] - before[1]; moves > 1 {
		t.Errorf("balanced on Mcp-Param-Workspace, the handle moved %d times in 4 calls; want at most once", moves)
	}

	dead := holderOf(t, cs, name, replicas...)
	survivor := replicas[0]
	if survivor == dead {
		survivor = replicas[1]
	}
	if err := dead.p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	dead.p.waitExit(10 * time.Second)
	begin := time.Now()
	res, retried := callRetryingOnce(t, alice, "podman_shell", map[string]any{"command": []string{"cat", "round-3.txt"}, "workspace": handle})
	if res.IsError || !strings.Contains(textOf(res), "round 3") {
		t.Fatalf("the first call after the holder's SIGKILL: %s", textOf(res))
	}
	t.Logf("first call after SIGKILL of the holding replica: %v (retried after a transport error: %v)", time.Since(begin).Round(100*time.Millisecond), retried)

	if err := survivor.p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	survivor.p.waitExit(60 * time.Second)
	restarted := launchReplica(t, cs, base+"c", t.TempDir(), tokenFile)
	alice = modernClient(t, restarted.p.url, testToken)
	if text, isError := callTool(t, alice, "read_file", map[string]any{"file_path": "round-2.txt", "workspace": handle}); isError || !strings.Contains(text, "round 2") {
		t.Fatalf("the handle on a server started after the others ended: %s", text)
	}
	if text, isError := callTool(t, alice, "workspace_close", map[string]any{"workspace": handle}); isError {
		t.Fatalf("workspace_close: %s", text)
	}
	if text, _ := callTool(t, alice, "ls", map[string]any{"path": ".", "workspace": handle}); text != unknown {
		t.Errorf("the closed handle: %q, want %q", text, unknown)
	}
	claim, err := cs.CoreV1().PersistentVolumeClaims(testNamespace).Get(context.Background(), object, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for key := range claim.Annotations {
		if strings.HasPrefix(key, "handles.wink-mcp.io/") {
			t.Errorf("the claim still records a handle after the close: %s", key)
		}
	}
	waitUntil(t, 60*time.Second, "every replica's Pod to go", func() bool {
		return len(podsNamed(t, cs, base+"a"))+len(podsNamed(t, cs, base+"b"))+len(podsNamed(t, cs, base+"c")) == 0
	})
}
