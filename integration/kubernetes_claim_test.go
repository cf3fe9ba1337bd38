package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// claimsNamed lists the PersistentVolumeClaims of the default namespace
// named prefix-...
func claimsNamed(t *testing.T, cs *kubernetes.Clientset, prefix string) []corev1.PersistentVolumeClaim {
	t.Helper()
	list, err := cs.CoreV1().PersistentVolumeClaims(testNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing PersistentVolumeClaims: %v", err)
	}
	var out []corev1.PersistentVolumeClaim
	for _, c := range list.Items {
		if strings.HasPrefix(c.Name, prefix+"-") {
			out = append(out, c)
		}
	}
	return out
}

// volumesOf lists the PersistentVolumes bound to claims named prefix-...
func volumesOf(t *testing.T, cs *kubernetes.Clientset, prefix string) []string {
	t.Helper()
	list, err := cs.CoreV1().PersistentVolumes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing PersistentVolumes: %v", err)
	}
	var out []string
	for _, v := range list.Items {
		if ref := v.Spec.ClaimRef; ref != nil && ref.Namespace == testNamespace && strings.HasPrefix(ref.Name, prefix+"-") {
			out = append(out, v.Name)
		}
	}
	return out
}

// deleteClaims deletes what a failed test left of claims named prefix-...
func deleteClaims(cs *kubernetes.Clientset, prefix string) {
	list, err := cs.CoreV1().PersistentVolumeClaims(testNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, c := range list.Items {
		if strings.HasPrefix(c.Name, prefix+"-") {
			_ = cs.CoreV1().PersistentVolumeClaims(testNamespace).Delete(context.Background(), c.Name, metav1.DeleteOptions{})
		}
	}
}

// TestKubernetesClaim puts a session's /workspace on a
// PersistentVolumeClaim of the test node's local-path provisioner
// (--kubernetes-workspace-volume claim): the claim is made and bound, the
// workspace user writes there, the Pod keeps its hardening; the session's
// end deletes the claim and its volume; a server killed with SIGKILL
// leaves its Pod and claim, which the next server's sweep deletes.
func TestKubernetesClaim(t *testing.T) {
	cs, _ := needCluster(t)
	prefix := "wk" + randomHex(4)
	t.Cleanup(func() { deleteClaims(cs, prefix) })
	cache := t.TempDir()

	p := startKubernetes(t, cs, prefix, cache, "--kubernetes-workspace-volume", "claim")
	begin := time.Now()
	if res := p.run("sh", "-c", "id -u && touch /workspace/.probe && rm /workspace/.probe && stat -c '%g %a' /workspace && df -P /workspace | tail -1"); res.ExitCode != 0 {
		t.Fatalf("writing to /workspace on a claim: %+v", res)
	} else {
		t.Logf("first call on a new claim %v: %q", time.Since(begin).Round(time.Millisecond), res.Stdout)
	}
	fileToolsScenario(t, p)
	pods := podsNamed(t, cs, prefix)
	claims := claimsNamed(t, cs, prefix)
	if len(pods) != 1 || len(claims) != 1 || claims[0].Name != pods[0].Name {
		t.Fatalf("Pods %d, claims %d; want one of each, of the same name", len(pods), len(claims))
	}
	pod, claim := pods[0], claims[0]
	if v := pod.Spec.Volumes[2].PersistentVolumeClaim; v == nil || v.ClaimName != claim.Name {
		t.Errorf("/workspace is %+v; want the claim %s", pod.Spec.Volumes[2].VolumeSource, claim.Name)
	}
	sc := pod.Spec.SecurityContext
	if sc.FSGroup == nil || *sc.FSGroup != 65534 || *sc.RunAsUser != 65534 || !*sc.RunAsNonRoot ||
		*pod.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation || pod.Spec.Containers[0].SecurityContext.Capabilities.Drop[0] != "ALL" {
		t.Errorf("the Pod on a claim lost its hardening: %+v", pod.Spec)
	}
	if claim.Status.Phase != corev1.ClaimBound || claim.Spec.StorageClassName == nil || *claim.Spec.StorageClassName != "wink-local" ||
		claim.Spec.Resources.Requests.Storage().Value() != 1<<30 || claim.Labels["io.wink-mcp.managed"] != "true" {
		t.Errorf("claim %s: %s, class %v, request %v, labels %v; want Bound, wink-local (the default), 1Gi, managed",
			claim.Name, claim.Status.Phase, claim.Spec.StorageClassName, claim.Spec.Resources.Requests.Storage(), claim.Labels)
	}
	p.endSession()
	waitUntil(t, 30*time.Second, "the ended session's claim and volume to go", func() bool {
		return len(claimsNamed(t, cs, prefix)) == 0 && len(volumesOf(t, cs, prefix)) == 0
	})

	// A server killed with SIGKILL deletes nothing; the next one's sweep
	// deletes its Pod and its claim.
	a := startKubernetes(t, cs, prefix, cache, "--kubernetes-workspace-volume", "claim")
	if res := a.run("sh", "-c", "echo x >/workspace/x"); res.ExitCode != 0 {
		t.Fatalf("%+v", res)
	}
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	a.waitExit(10 * time.Second)
	if len(podsNamed(t, cs, prefix)) != 1 || len(claimsNamed(t, cs, prefix)) != 1 {
		t.Fatalf("after SIGKILL: want the dead server's Pod and claim")
	}
	b := startKubernetes(t, cs, prefix, cache, "--lazy")
	b.waitLog(60*time.Second, "orphan sweep done", nil)
	waitUntil(t, 30*time.Second, "the dead server's Pod, claim and volume to go", func() bool {
		return len(podsNamed(t, cs, prefix)) == 0 && len(claimsNamed(t, cs, prefix)) == 0 && len(volumesOf(t, cs, prefix)) == 0
	})
}

// keptObjectName is the name the Kubernetes engine gives the claim and
// Lease of a kept workspace whose name is lower-case letters and digits
// (engine/kubernetes keptObjectName).
func keptObjectName(name string) string {
	sum := sha256.Sum256([]byte(name))
	return "wink-kept-" + name + "-" + hex.EncodeToString(sum[:4])
}

// keptWorkspaceObjects returns the name of the claim and Lease of kept
// workspace name (keptObjectName), and deletes both when the test ends,
// whatever the servers left.
func keptWorkspaceObjects(t *testing.T, cs kubernetes.Interface, name string) string {
	t.Helper()
	object := keptObjectName(name)
	t.Cleanup(func() {
		_ = cs.CoordinationV1().Leases(testNamespace).Delete(context.Background(), object, metav1.DeleteOptions{})
		_ = cs.CoreV1().PersistentVolumeClaims(testNamespace).Delete(context.Background(), object, metav1.DeleteOptions{})
	})
	return object
}

// TestKubernetesKeptWorkspace keeps a workspace in the cluster
// (--workspace NAME with --engine kubernetes): its files on a claim named
// from it, its owner a Lease. A second server (another cache directory,
// as another replica has) is refused, naming the holder; the holder is
// killed with SIGKILL and a server started again with the same name finds
// the files, once the dead holder's Lease has run out; `wink-mcp
// workspaces` lists it and removes its claim and Lease. Nothing is left.
func TestKubernetesKeptWorkspace(t *testing.T) {
	cs, _ := needCluster(t)
	prefix := "wk" + randomHex(4)
	name := "kept" + randomHex(4)
	object := keptWorkspaceObjects(t, cs, name)
	a := startKubernetes(t, cs, prefix, t.TempDir(), "--workspace", name)
	if res := a.run("sh", "-c", "echo from-a >/workspace/kept.txt && id -u"); res.ExitCode != 0 || res.Stdout != "65534\n" {
		t.Fatalf("writing to the kept workspace: %+v", res)
	}
	claim, err := cs.CoreV1().PersistentVolumeClaims(testNamespace).Get(context.Background(), object, metav1.GetOptions{})
	if err != nil || claim.Labels["io.wink-mcp.kept"] != "true" || claim.Labels["io.wink-mcp.managed"] != "" || claim.Annotations["io.wink-mcp/kept-name"] != name {
		t.Fatalf("the kept workspace's claim: %+v, %v", claim, err)
	}
	lease, err := cs.CoordinationV1().Leases(testNamespace).Get(context.Background(), object, metav1.GetOptions{})
	if err != nil || !strings.Contains(*lease.Spec.HolderIdentity, "wink-mcp instance") {
		t.Fatalf("the kept workspace's Lease: %+v, %v", lease, err)
	}

	b := startKubernetes(t, cs, prefix, t.TempDir(), "--workspace", name)
	if res := b.call("ls", nil); !res.IsError || !strings.Contains(textOf(res), `workspace "`+name+`" is held by wink-mcp instance`) {
		t.Errorf("a second server on the held workspace: %s", textOf(res))
	}
	b.endSession()

	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	a.waitExit(10 * time.Second)
	begin := time.Now()
	c := startKubernetes(t, cs, prefix, t.TempDir(), "--workspace", name)
	if got := c.run("cat", "kept.txt").Stdout; got != "from-a\n" {
		t.Errorf("after SIGKILL and a new server: kept.txt = %q; want from-a", got)
	}
	t.Logf("a new server took the dead holder's workspace in %v", time.Since(begin).Round(time.Millisecond))
	c.endSession()
	if _, err := cs.CoordinationV1().Leases(testNamespace).Get(context.Background(), object, metav1.GetOptions{}); err == nil {
		t.Error("the session ended and its Lease is still there")
	}

	cli := func(args ...string) string {
		out, err := exec.Command(winkBin, append([]string{"workspaces", "--engine", "kubernetes", "--kubeconfig", clusterKubeconfig, "--namespace", testNamespace}, args...)...).CombinedOutput()
		if err != nil {
			t.Errorf("wink-mcp workspaces %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if out := cli("list"); !strings.Contains(out, name) || !strings.Contains(out, "Bound") || !strings.Contains(out, "free") {
		t.Errorf("wink-mcp workspaces list:\n%s", out)
	}
	cli("rm", name)
	waitUntil(t, 60*time.Second, "the kept workspace's claim, volume and Lease, and every Pod, to go", func() bool {
		_, leaseErr := cs.CoordinationV1().Leases(testNamespace).Get(context.Background(), object, metav1.GetOptions{})
		_, claimErr := cs.CoreV1().PersistentVolumeClaims(testNamespace).Get(context.Background(), object, metav1.GetOptions{})
		return apierrors.IsNotFound(leaseErr) && apierrors.IsNotFound(claimErr) && len(volumesOf(t, cs, "wink-kept-"+name)) == 0 &&
			len(podsNamed(t, cs, prefix)) == 0
	})
}

// TestKubernetesKeptWorkspaceOverHTTP opens a kept workspace by its URL
// (/mcp?workspace=NAME) on a server of the Kubernetes engine: one session
// holds it, a second session asking for it is refused naming the first,
// and once the first has ended a third finds its files. SIGTERM leaves the
// kept claim and no Lease; the CLI removes it.
func TestKubernetesKeptWorkspaceOverHTTP(t *testing.T) {
	cs, _ := needCluster(t)
	prefix := "wk" + randomHex(4)
	name := "kept" + randomHex(4)
	object := keptWorkspaceObjects(t, cs, name)
	p := startKubernetesOver(t, "http", cs, prefix, "", "--warm", "0")
	first := p.sibling(nil, "?workspace="+name)
	if res := first.run("sh", "-c", "echo over-http >note.txt"); res.ExitCode != 0 {
		t.Fatalf("%+v", res)
	}
	second := p.sibling(nil, "?workspace="+name)
	if res := second.call("ls", nil); !res.IsError || !strings.Contains(textOf(res), `workspace "`+name+`" is held by wink-mcp instance`) {
		t.Errorf("a second session on the held workspace: %s", textOf(res))
	}
	first.endSession()
	waitUntil(t, 30*time.Second, "the first session's Lease to go", func() bool {
		_, err := cs.CoordinationV1().Leases(testNamespace).Get(context.Background(), object, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	third := p.sibling(nil, "?workspace="+name)
	if got := third.run("cat", "note.txt").Stdout; got != "over-http\n" {
		t.Errorf("a later session: note.txt = %q", got)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.waitExit(30 * time.Second)
	if _, err := cs.CoreV1().PersistentVolumeClaims(testNamespace).Get(context.Background(), object, metav1.GetOptions{}); err != nil {
		t.Errorf("after SIGTERM the kept claim is gone: %v", err)
	}
	if _, err := cs.CoordinationV1().Leases(testNamespace).Get(context.Background(), object, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after SIGTERM the Lease is left: %v", err)
	}
	if out, err := exec.Command(winkBin, "workspaces", "--engine", "kubernetes", "--kubeconfig", clusterKubeconfig, "--namespace", testNamespace, "rm", name).CombinedOutput(); err != nil {
		t.Errorf("wink-mcp workspaces rm: %v\n%s", err, out)
	}
	waitUntil(t, 60*time.Second, "the claim, its volume and every Pod to go", func() bool {
		_, err := cs.CoreV1().PersistentVolumeClaims(testNamespace).Get(context.Background(), object, metav1.GetOptions{})
		return apierrors.IsNotFound(err) && len(volumesOf(t, cs, "wink-kept-"+name)) == 0 && len(podsNamed(t, cs, prefix)) == 0
	})
}
