package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wink-mcp/wink-mcp/tools"
)

// TestKubernetesCheckpointsAcrossServers runs two servers of the
// Kubernetes engine that share one --checkpoint-dir, as two replicas
// sharing a volume, each with a cache directory of its own. A kept
// workspace checkpointed through A, A killed with SIGKILL: the same
// workspace opened through B lists A's checkpoint and restores it, bytes
// exact. The model cannot reach the store from the workspace Pod, by
// path or by link. The store outlives B's session, `wink-mcp workspaces`
// lists its checkpoints and `rm` removes them; a session of no kept
// workspace leaves nothing in the shared directory or its cache.
func TestKubernetesCheckpointsAcrossServers(t *testing.T) {
	cs, _ := needCluster(t)
	prefix := "wk" + randomHex(4)
	name := "ckstore" + randomHex(4)
	object := keptWorkspaceObjects(t, cs, name)
	shared := t.TempDir()
	a := startKubernetes(t, cs, prefix, t.TempDir(), "--workspace", name, "--checkpoint-dir", shared)
	// Bytes of every value, a name with a space, a link: what a restore must give back exactly.
	plant := "head -c 200000 /dev/urandom > 'blob one.bin' && printf 'line\\n' > note.txt && ln -s note.txt link && sha256sum 'blob one.bin' | cut -c1-64"
	res := a.run("sh", "-c", plant)
	if res.ExitCode != 0 || len(strings.TrimSpace(res.Stdout)) != 64 {
		t.Fatalf("planting: %+v", res)
	}
	want := strings.TrimSpace(res.Stdout)
	var cp tools.WorkspaceCheckpointResult
	decodeStructured(t, a.call("workspace_checkpoint", map[string]any{"message": "through A"}), &cp)
	if cp.Checkpoint.ID != "c1" {
		t.Fatalf("checkpoint through A = %+v", cp)
	}
	if res := a.run("sh", "-c", "echo changed > 'blob one.bin' && rm note.txt"); res.ExitCode != 0 {
		t.Fatalf("changing the files: %+v", res)
	}
	claim, err := cs.CoreV1().PersistentVolumeClaims(testNamespace).Get(context.Background(), object, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(shared, "kept", string(claim.UID))
	if _, err := os.Stat(filepath.Join(store, "checkpoints", "c1.json")); err != nil {
		t.Fatalf("the checkpoint is not in the shared directory under the claim's UID: %v", err)
	}

	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	a.waitExit(10 * time.Second)
	begin := time.Now()
	b := startKubernetes(t, cs, prefix, t.TempDir(), "--workspace", name, "--checkpoint-dir", shared)
	var list tools.WorkspaceCheckpointsResult
	decodeStructured(t, b.call("workspace_checkpoints", nil), &list)
	if len(list.Checkpoints) != 1 || list.Checkpoints[0].ID != "c1" || list.Checkpoints[0].Message != "through A" {
		t.Fatalf("B lists %+v; want A's c1", list.Checkpoints)
	}
	t.Logf("B listed A's checkpoint %v after A's SIGKILL (B's start and the dead holder's Lease included)", time.Since(begin).Round(time.Millisecond))
	var r tools.WorkspaceRestoreResult
	decodeStructured(t, b.call("workspace_restore", map[string]any{"checkpoint": "c1"}), &r)
	got := b.run("sh", "-c", "sha256sum 'blob one.bin' | cut -c1-64; cat note.txt; readlink link")
	if got.Stdout != want+"\nline\nnote.txt\n" {
		t.Errorf("after B restored A's checkpoint: %q; want %s, line, note.txt", got.Stdout, want)
	}

	before := treeListing(t, store)
	modelCannotReach(t, b, shared, string(claim.UID))
	if after := treeListing(t, store); !slices.Equal(before, after) {
		t.Errorf("the model changed the store:\nbefore %v\nafter  %v", before, after)
	}

	b.endSession()
	if _, err := os.Stat(filepath.Join(store, "checkpoints", "c2.json")); err != nil {
		t.Errorf("the store went with the session: %v", err)
	}
	cli := func(args ...string) (string, error) {
		out, err := exec.Command(winkBin, append([]string{"workspaces", "--engine", "kubernetes", "--kubeconfig", clusterKubeconfig,
			"--namespace", testNamespace, "--checkpoint-dir", shared}, args...)...).CombinedOutput()
		return string(out), err
	}
	out, err := cli("list")
	if line := lineWith(out, name); err != nil || !strings.Contains(line, " 2, ") {
		t.Errorf("wink-mcp workspaces list: %v; want %s with 2 checkpoints:\n%s", err, name, out)
	}
	waitUntil(t, 30*time.Second, "B's Lease to go", func() bool {
		_, err := cs.CoordinationV1().Leases(testNamespace).Get(context.Background(), object, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	if out, err := cli("rm", name); err != nil {
		t.Errorf("wink-mcp workspaces rm: %v\n%s", err, out)
	}
	if _, err := os.Stat(store); !os.IsNotExist(err) {
		t.Errorf("after rm the store is left: %v", err)
	}

	// A session of no kept workspace: its store is its replica's, and goes with it.
	cache := t.TempDir()
	c := startKubernetes(t, cs, prefix, cache, "--checkpoint-dir", shared)
	c.run("sh", "-c", "echo x > x.txt")
	decodeStructured(t, c.call("workspace_checkpoint", nil), &cp)
	stores, _ := filepath.Glob(filepath.Join(cache, "instances", "*", "stores", "*", "checkpoints", "c1.json"))
	if len(stores) != 1 {
		t.Fatalf("the session's checkpoint in its cache: %v; want one", stores)
	}
	c.endSession()
	waitUntil(t, 30*time.Second, "the session's store to go", func() bool {
		_, err := os.Stat(filepath.Dir(filepath.Dir(stores[0])))
		return os.IsNotExist(err)
	})
	if left := treeListing(t, shared); !slices.Equal(left, []string{"kept"}) {
		t.Errorf("the shared directory holds %v; want the empty kept/", left)
	}
}

// modelCannotReach checks, from p's workspace Pod, that nothing names the
// checkpoint directory shared or the store (no mount, no path, no
// environment), and tries to write the store through write_file and
// podman_shell: by absolute path, by ../, and through a link.
func modelCannotReach(t *testing.T, p *proc, shared, key string) {
	t.Helper()
	// The claim's UID, the store's key, is in the Pod's own volume's path
	// (pvc-<uid>): the key is no secret; the store's path is.
	look := p.run("sh", "-c", "cat /proc/self/mountinfo; env; ls -la /")
	for _, leak := range []string{shared, "kept/" + key, "owner.lock"} {
		if strings.Contains(look.Stdout, leak) {
			t.Errorf("the workspace Pod sees %q:\n%s", leak, look.Stdout)
		}
	}
	found := p.run("sh", "-c", "find / -xdev \\( -path /proc -o -path /sys \\) -prune -o \\( -name owner.lock -o -name '"+key+"' -o -name 'c1.json' \\) -print 2>/dev/null")
	if found.Stdout != "" {
		t.Errorf("files of the store in the Pod:\n%s", found.Stdout)
	}
	if ls := p.run("ls", "-la", shared); ls.ExitCode == 0 {
		t.Errorf("the Pod lists the shared directory: %+v", ls)
	}
	record := filepath.Join(shared, "kept", key, "checkpoints", "c9.json")
	for _, path := range []string{record, strings.Repeat("../", 12) + strings.TrimPrefix(record, "/"), "/workspace/../" + strings.TrimPrefix(record, "/")} {
		res := p.call("write_file", map[string]any{"file_path": path, "content": "{}"})
		if !res.IsError {
			t.Errorf("write_file %s: %s; want it refused", path, textOf(res))
		}
	}
	p.run("sh", "-c", "mkdir -p "+filepath.Dir(record)+" && echo '{}' > "+record+"; ln -s "+filepath.Join(shared, "kept", key)+" esc")
	res := p.call("write_file", map[string]any{"file_path": "esc/checkpoints/c9.json", "content": "{}"})
	t.Logf("write_file through a link to the store's path: error %v, %s", res.IsError, textOf(res))
	var list tools.WorkspaceCheckpointsResult
	decodeStructured(t, p.call("workspace_checkpoints", nil), &list)
	for _, c := range list.Checkpoints {
		if c.ID == "c9" {
			t.Errorf("a checkpoint the model wrote is listed: %+v", c)
		}
	}
	p.run("rm", "-f", "esc")
}

// treeListing lists the paths under dir, with each file's digest.
func treeListing(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if !d.Type().IsRegular() {
			out = append(out, rel)
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		out = append(out, rel+" "+hex.EncodeToString(sum[:8]))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// lineWith is the first line of out that contains s.
func lineWith(out, s string) string {
	for line := range strings.SplitSeq(out, "\n") {
		if strings.Contains(line, s) {
			return line
		}
	}
	return ""
}

// TestKubernetesCheckpointStoreLockOutlivesLease stops server A (SIGSTOP)
// while it holds a kept workspace, so that its Lease runs out while it
// still lives: B then takes the Lease, but not the checkpoint store,
// whose lock A's process keeps, and is refused naming the store rather
// than writing beside A. Once A's session ends, B opens the workspace
// and finds A's checkpoint.
func TestKubernetesCheckpointStoreLockOutlivesLease(t *testing.T) {
	cs, _ := needCluster(t)
	prefix := "wk" + randomHex(4)
	name := "cklock" + randomHex(4)
	keptWorkspaceObjects(t, cs, name)
	shared := t.TempDir()
	a := startKubernetes(t, cs, prefix, t.TempDir(), "--workspace", name, "--checkpoint-dir", shared)
	a.run("sh", "-c", "echo a > a.txt")
	var cp tools.WorkspaceCheckpointResult
	decodeStructured(t, a.call("workspace_checkpoint", map[string]any{"message": "A's"}), &cp)
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	t.Cleanup(func() {
		if stopped {
			_ = a.cmd.Process.Signal(syscall.SIGCONT)
		}
	})

	b := startKubernetes(t, cs, prefix, t.TempDir(), "--workspace", name, "--checkpoint-dir", shared)
	var last string
	begin := time.Now()
	waitUntil(t, 120*time.Second, "B to be refused on the store's lock once A's Lease has run out", func() bool {
		res := b.call("workspace_checkpoints", nil)
		last = textOf(res)
		if !res.IsError && !strings.Contains(last, "held by") {
			t.Fatalf("B opened the workspace while A still runs: %s", last)
		}
		return strings.Contains(last, "checkpoint store is locked by another process")
	})
	if !strings.Contains(last, filepath.Join(shared, "kept")) || !strings.Contains(last, name) {
		t.Errorf("B's refusal names neither the store nor the workspace: %s", last)
	}
	t.Logf("B refused on the store's lock %v after A stopped: %s", time.Since(begin).Round(time.Millisecond), last)

	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped = false
	a.endSession()
	waitUntil(t, 60*time.Second, "B to open the workspace once A has ended", func() bool {
		var list tools.WorkspaceCheckpointsResult
		res := b.call("workspace_checkpoints", nil)
		if res.IsError {
			return false
		}
		decodeStructured(t, res, &list)
		if len(list.Checkpoints) != 1 || list.Checkpoints[0].Message != "A's" {
			t.Fatalf("B lists %+v; want A's checkpoint", list.Checkpoints)
		}
		return true
	})
	b.endSession()
}

// A kept workspace's egress lock on Kubernetes is recorded in its
// checkpoint store, which every server shares: A locks it and is killed
// with SIGKILL, and B, opening the same workspace, refuses what A's
// --egress allowed, naming the lock.
func TestKubernetesKeptEgressLockAcrossServers(t *testing.T) {
	cs, _ := needCluster(t)
	prefix := "wk" + randomHex(4)
	name := "locked" + randomHex(4)
	keptWorkspaceObjects(t, cs, name)
	shared := t.TempDir()
	port := httpServerOnLoopback(t, "reached")
	args := []string{"--workspace", name, "--checkpoint-dir", shared, "--warm", "0", "--egress", "localhost:" + port}
	get := func(p *proc) string {
		return rawProxy(t, p, "GET http://localhost:"+port+"/ HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
	}
	a := startKubernetes(t, cs, prefix, t.TempDir(), args...)
	if out := get(a); !strings.Contains(out, "reached") {
		t.Fatalf("before the lock: %q", out)
	}
	if res := a.call("workspace_egress", map[string]any{"action": "lock"}); res.IsError {
		t.Fatalf("lock: %s", textOf(res))
	}
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	a.waitExit(10 * time.Second)
	b := startKubernetes(t, cs, prefix, t.TempDir(), args...)
	if out := get(b); !strings.Contains(out, "403") || !strings.Contains(out, "egress is locked") {
		t.Errorf("through B after A locked the kept workspace: %q", out)
	}
	b.endSession()
}
