package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// clusterContainerd is the socket of the test node's own containerd
// (hack/cluster/config.sh), into which the agent image is imported.
var clusterContainerd = envOr("WINK_TEST_CLUSTER_CONTAINERD", "/run/wink-mcp/cluster/containerd/containerd.sock")

// testNamespace holds the test servers' Pods and Leases. Servers sweep the
// Pods of every dead instance of their namespace, so people who share a
// test node give each worktree its own (the namespace must exist).
var testNamespace = envOr("WINK_TEST_NAMESPACE", "default")

var agentImage struct {
	once sync.Once
	name string
	err  error
}

// kubernetesAgentImage builds, once per test binary, the image of the
// Kubernetes engine's init container from the wink-mcp under test with
// `make image`'s script (deploy/image.sh: the static binary alone, at
// /wink-mcp, the server's image too), and imports it into the test node's
// containerd: no registry is reachable here.
func kubernetesAgentImage(t *testing.T) string {
	t.Helper()
	agentImage.once.Do(func() {
		cmd := exec.Command("../deploy/image.sh", winkBin)
		cmd.Env = append(os.Environ(), "WINK_IMAGE_IMPORT=yes", "WINK_CLUSTER_CONTAINERD="+clusterContainerd)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			agentImage.err = fmt.Errorf("deploy/image.sh %s: %v: %s", winkBin, err, stderr.Bytes())
			return
		}
		agentImage.name = strings.TrimSpace(string(out))
	})
	if agentImage.err != nil {
		t.Fatalf("making the agent image: %v", agentImage.err)
	}
	return agentImage.name
}

// startKubernetes starts wink-mcp over stdio with --engine kubernetes on
// the test node, its Pods named prefix-..., which are deleted at cleanup.
func startKubernetes(t *testing.T, cs *kubernetes.Clientset, prefix, cache string, args ...string) *proc {
	t.Helper()
	return startKubernetesOver(t, "stdio", cs, prefix, cache, args...)
}

// startKubernetesOver is startKubernetes over a transport, with args and
// nothing else. The test node enforces NetworkPolicies (kube-router's
// firewall), so the server needs no --allow-unenforced-network-policy:
// without an enforcer it refuses every workspace, naming the flag.
func startKubernetesOver(t *testing.T, transport string, cs *kubernetes.Clientset, prefix, cache string, args ...string) *proc {
	t.Helper()
	image := kubernetesAgentImage(t)
	t.Cleanup(func() { deletePods(cs, prefix) })
	return start(t, startOptions{transport: transport, image: pythonImage, cache: cache, serviceFromEnv: true, args: append([]string{
		"--engine", "kubernetes", "--kubeconfig", clusterKubeconfig, "--kubernetes-agent-image", image,
		"--namespace", testNamespace, "--name-prefix", prefix, "--disk-limit", "1g"}, args...)})
}

// podsNamed lists the Pods of the test namespace named prefix-...
func podsNamed(t *testing.T, cs *kubernetes.Clientset, prefix string) []corev1.Pod {
	t.Helper()
	list, err := cs.CoreV1().Pods(testNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing Pods: %v", err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if strings.HasPrefix(p.Name, prefix+"-") {
			out = append(out, p)
		}
	}
	return out
}

func deletePods(cs *kubernetes.Clientset, prefix string) {
	list, err := cs.CoreV1().Pods(testNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, p := range list.Items {
		if strings.HasPrefix(p.Name, prefix+"-") {
			_ = cs.CoreV1().Pods(testNamespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		}
	}
}

// TestKubernetesEngine drives the tools of a session whose workspace is a
// Pod of the test node: the file tools, the shell as the workspace user, a
// background job; the Pod is read back hardened, and is gone once the
// session ends.
func TestKubernetesEngine(t *testing.T) {
	cs, cfg := needCluster(t)
	prefix := "wk" + randomHex(4)
	p := startKubernetes(t, cs, prefix, "")

	begin := time.Now()
	if res := p.run("id", "-u"); res.ExitCode != 0 || res.Stdout != "65534\n" {
		t.Fatalf("id -u: %+v; want 65534", res)
	}
	first := time.Since(begin)
	rec := p.waitLog(5*time.Second, "workspace ready", nil)
	warm := time.Duration(1<<63 - 1)
	for range 5 {
		begin = time.Now()
		p.run("true")
		warm = min(warm, time.Since(begin))
	}
	t.Logf("first call %v (steps %v), fastest of 5 warm podman_shell [true] %v", first.Round(time.Millisecond), rec["steps"], warm.Round(time.Millisecond))

	fileToolsScenario(t, p)
	started := p.shell(map[string]any{"command": []string{"sh", "-c", "echo from the job"}, "background": true})
	if j := p.waitJob(started.Job, 30*time.Second); *j.ExitCode != 0 {
		t.Errorf("background job: %+v", j)
	}

	pods := podsNamed(t, cs, prefix)
	if len(pods) != 1 {
		t.Fatalf("%d Pods named %s-...; want 1", len(pods), prefix)
	}
	checkHardened(t, &pods[0])
	// /tmp is memory bounded by --tmp-size (256m), not the node's disk.
	if res := p.run("sh", "-c", "dd if=/dev/zero of=/tmp/fill bs=1M count=300 2>&1; rm -f /tmp/fill"); !strings.Contains(res.Stdout, "No space left") {
		t.Errorf("writing 300 MiB to a /tmp of 256 MiB: %+v; want ENOSPC", res)
	}
	// What a call would cost as an exec of its own, which the engine never does.
	begin = time.Now()
	if _, stderr, err := execInPod(context.Background(), cs, cfg, &pods[0], "true"); err != nil {
		t.Fatalf("exec true: %v (%s)", err, stderr)
	}
	t.Logf("an exec of its own: %v", time.Since(begin).Round(time.Millisecond))

	p.endSession()
	if left := podsNamed(t, cs, prefix); len(left) > 0 {
		t.Errorf("the session ended and its Pod %s is still there", left[0].Name)
	}
}

// checkHardened checks the settings of a workspace Pod as the API server
// has them: what the engine's own read-back checks, seen from outside.
func checkHardened(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	s := pod.Spec
	c := s.Containers[0]
	sc := c.SecurityContext
	for what, ok := range map[string]bool{
		"no service-account token":   s.AutomountServiceAccountToken != nil && !*s.AutomountServiceAccountToken,
		"no service links":           s.EnableServiceLinks != nil && !*s.EnableServiceLinks,
		"no host namespace":          !s.HostNetwork && !s.HostPID && !s.HostIPC,
		"user 65534":                 sc.RunAsUser != nil && *sc.RunAsUser == 65534 && *sc.RunAsGroup == 65534,
		"not root":                   sc.RunAsNonRoot != nil && *sc.RunAsNonRoot,
		"no privilege escalation":    sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation,
		"every capability dropped":   sc.Capabilities != nil && len(sc.Capabilities.Drop) == 1 && sc.Capabilities.Drop[0] == "ALL" && len(sc.Capabilities.Add) == 0,
		"RuntimeDefault seccomp":     sc.SeccompProfile != nil && sc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault,
		"memory limit 1 GiB":         c.Resources.Limits.Memory().Value() == 1<<30,
		"cpu limit 1":                c.Resources.Limits.Cpu().MilliValue() == 1000,
		"ephemeral storage 1 GiB":    c.Resources.Limits.StorageEphemeral().Value() == 1<<30,
		"/tmp in memory, 256 MiB":    s.Volumes[1].EmptyDir != nil && s.Volumes[1].EmptyDir.Medium == corev1.StorageMediumMemory && s.Volumes[1].EmptyDir.SizeLimit.Value() == 256<<20,
		"/workspace bounded, 1 GiB":  s.Volumes[2].EmptyDir != nil && s.Volumes[2].EmptyDir.SizeLimit.Value() == 1<<30,
		"agent read-only":            c.VolumeMounts[0].MountPath == "/.wink" && c.VolumeMounts[0].ReadOnly,
		"init container not root":    *s.InitContainers[0].SecurityContext.RunAsNonRoot,
		"agent runs as the init":     c.Command[0] == "/.wink/wink-mcp" && c.Args[0] == "agent",
		"the pod is running":         pod.Status.Phase == corev1.PodRunning,
		"never restarted by kubelet": s.RestartPolicy == corev1.RestartPolicyNever,
	} {
		if !ok {
			t.Errorf("the workspace Pod lacks %s: %+v", what, pod.Spec)
		}
	}
}

// TestKubernetesSweep kills a server with SIGKILL, which removes nothing,
// and checks that the next server on the same cache directory deletes the
// dead one's Pod: its lock file, here, is free, though its Lease has not
// expired yet.
func TestKubernetesSweep(t *testing.T) {
	cs, _ := needCluster(t)
	prefix := "wk" + randomHex(4)
	cache := t.TempDir()
	a := startKubernetes(t, cs, prefix, cache)
	deadID := instanceOf(t, a)
	dead := a.container()
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	a.waitExit(10 * time.Second)
	if left := podsNamed(t, cs, prefix); len(left) != 1 || left[0].Name != dead {
		t.Fatalf("after SIGKILL, Pods %v; want the dead server's %s", left, dead)
	}
	b := startKubernetes(t, cs, prefix, cache, "--lazy")
	b.waitLog(30*time.Second, "orphan sweep done", nil)
	// Its lock file on this host is free: no wait for its Lease to expire.
	waitUntil(t, leaseDuration+sweepPeriod+sweptWithinSlack, "the dead server's Pod to go", func() bool {
		return len(podsNamed(t, cs, prefix)) == 0
	})
	// The same sweep deletes its Lease, known dead by the lock file.
	waitUntil(t, 10*time.Second, "the dead server's Lease to go", func() bool { return !leaseExists(t, cs, deadID) })
}

// TestKubernetesEngineOverHTTP serves streamable HTTP with the default
// warm pool, whose Pods are made ahead: a session's file tools and shell
// work, and SIGTERM leaves no Pod, the pool's included.
func TestKubernetesEngineOverHTTP(t *testing.T) {
	cs, _ := needCluster(t)
	prefix := "wk" + randomHex(4)
	p := startKubernetesOver(t, "http", cs, prefix, "")
	fileToolsScenario(t, p)
	waitUntil(t, 60*time.Second, "the warm pool's Pods", func() bool { return len(podsNamed(t, cs, prefix)) >= 3 })
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.waitExit(30 * time.Second)
	if left := podsNamed(t, cs, prefix); len(left) > 0 {
		t.Errorf("after SIGTERM, %d Pods named %s-... are left", len(left), prefix)
	}
}
