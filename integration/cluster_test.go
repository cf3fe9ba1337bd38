package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/utils/ptr"
)

// clusterKubeconfig is the administrator's kubeconfig of the Kubernetes
// test node that `make cluster` runs (docs/kubernetes-test-cluster.md).
var clusterKubeconfig = envOr("WINK_TEST_KUBECONFIG", "/var/lib/wink-mcp/cluster/admin.kubeconfig")

// clusterNode is the test node's name (hack/cluster/config.sh).
const clusterNode = "wink-node"

// needCluster returns a client of the test cluster, or skips the test
// without one (fails it when CI is set: a broken set-up must not pass as
// green).
func needCluster(t *testing.T) (*kubernetes.Clientset, *rest.Config) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", clusterKubeconfig)
	var cs *kubernetes.Clientset
	if err == nil {
		cs, err = kubernetes.NewForConfig(cfg)
	}
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err = cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and the Kubernetes test cluster is not usable: %v; run `make cluster`", err)
		}
		t.Skipf("the Kubernetes test cluster is not usable (%v); run `make cluster`", err)
	}
	return cs, cfg
}

// TestCluster checks the Kubernetes test node the Kubernetes engine's tests
// will run on: the node is Ready, a Pod of the workspace image, imported
// rather than pulled, runs hardened as that engine will run it, takes an
// exec over WebSocket, and has no route beyond the machine.
func TestCluster(t *testing.T) {
	cs, cfg := needCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	node, err := cs.CoreV1().Nodes().Get(ctx, clusterNode, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting node %s: %v", clusterNode, err)
	}
	if !nodeReady(node) {
		t.Fatalf("node %s is not Ready: %+v", clusterNode, node.Status.Conditions)
	}

	pods := cs.CoreV1().Pods("default")
	start := time.Now()
	pod, err := pods.Create(ctx, smokePod(), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the Pod: %v", err)
	}
	t.Cleanup(func() {
		// Gone already when the test deleted it; otherwise the test failed
		// half-way and the Pod must not outlive it.
		_ = pods.Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		pod, err = pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return pod.Status.Phase == corev1.PodRunning, nil
	})
	if err != nil {
		t.Fatalf("waiting for Pod %s to run: %v (status: %+v)", pod.Name, err, pod.Status)
	}
	t.Logf("Pod %s Running %v after its creation", pod.Name, time.Since(start).Round(time.Millisecond))

	start = time.Now()
	stdout, stderr, err := execInPod(ctx, cs, cfg, pod, "true")
	if err != nil {
		t.Fatalf("exec true in Pod %s: %v (stdout %q, stderr %q)", pod.Name, err, stdout, stderr)
	}
	t.Logf("exec true took %v", time.Since(start).Round(time.Millisecond))
	stdout, stderr, err = execInPod(ctx, cs, cfg, pod, "id", "-u")
	if err != nil || stdout != "65534\n" {
		t.Fatalf("id -u in Pod %s: %q, %v (stderr %q); want 65534", pod.Name, stdout, err, stderr)
	}

	// Nothing a Pod sends leaves the machine: its network has no default
	// route (and the node no masquerade).
	stdout, stderr, err = execInPod(ctx, cs, cfg, pod, "cat", "/proc/net/route")
	if err != nil {
		t.Fatalf("reading the routes of Pod %s: %v (stderr %q)", pod.Name, err, stderr)
	}
	for _, line := range strings.Split(stdout, "\n")[1:] {
		if fields := strings.Fields(line); len(fields) > 1 && fields[1] == "00000000" {
			t.Errorf("Pod %s has a default route: %q", pod.Name, line)
		}
	}

	if err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatalf("deleting Pod %s: %v", pod.Name, err)
	}
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		t.Fatalf("waiting for Pod %s to go: %v", pod.Name, err)
	}
}

func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// smokePod is a Pod of the workspace image with the hardening the
// Kubernetes engine will ask for: not root, no privilege escalation, no
// capability, the runtime's seccomp profile, no service-account token.
func smokePod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "wink-cluster-smoke-"},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken:  ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To[int64](65534),
				RunAsGroup:     ptr.To[int64](65534),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:            "workspace",
				Image:           pythonImage,
				ImagePullPolicy: corev1.PullNever,
				Command:         []string{"sleep", "infinity"},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
}

// execInPod runs argv in the Pod's first container over the exec
// subresource's WebSocket protocol, and returns its output.
func execInPod(ctx context.Context, cs *kubernetes.Clientset, cfg *rest.Config, pod *corev1.Pod, argv ...string) (string, string, error) {
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).
		SubResource("exec").VersionedParams(&corev1.PodExecOptions{
		Container: pod.Spec.Containers[0].Name,
		Command:   argv,
		Stdout:    true,
		Stderr:    true,
	}, scheme.ParameterCodec)
	exec, err := remotecommand.NewWebSocketExecutor(cfg, "GET", req.URL().String())
	if err != nil {
		return "", "", fmt.Errorf("making the exec client: %w", err)
	}
	var stdout, stderr bytes.Buffer
	err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	return stdout.String(), stderr.String(), err
}
