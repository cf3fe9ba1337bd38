package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wink-mcp/wink-mcp/tools"
)

// clusterKubectl is the kubectl `make cluster` builds, of the node's version.
var clusterKubectl = envOr("WINK_TEST_KUBECTL", "/var/cache/wink-mcp/k8s/v1.34.4/bin/kubectl")

// kubectl runs the test node's kubectl as its administrator, stdin
// given, and returns its output; a failure fails the test.
func kubectl(t *testing.T, stdin []byte, args ...string) string {
	t.Helper()
	out, err := kubectlResult(stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func kubectlResult(stdin []byte, args ...string) (string, error) {
	cmd := exec.Command(clusterKubectl, append([]string{"--kubeconfig", clusterKubeconfig}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%v: %s%s", err, stderr.Bytes(), out)
	}
	return string(out), nil
}

// manifestsOverlay writes, in a folder of the test, a kustomize overlay of
// deploy/kubernetes as an operator would (namespace, a name prefix, the
// image), plus what this node needs: the API server's own address (the
// node runs no kube-proxy, so Pods cannot reach its Service address), its
// unenforced NetworkPolicies allowed, no warm pool, and the checkpoints'
// claim ReadWriteOnce (one node; its provisioner offers no other).
func manifestsOverlay(t *testing.T, cfg *rest.Config, namespace, image string) string {
	t.Helper()
	dir := t.TempDir()
	base, err := filepath.Abs("../deploy/kubernetes")
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(dir, base)
	if err != nil {
		t.Fatal(err)
	}
	api, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	name, tag, _ := strings.Cut(image, ":")
	kustomization := fmt.Sprintf(`resources: [%s]
namespace: %s
namePrefix: %s-
images:
  - name: wink-mcp
    newName: %s
    newTag: %q
patches:
  - target: {kind: Deployment, name: wink-mcp}
    patch: |
      - {op: add, path: /spec/template/spec/containers/0/env/-, value: {name: KUBERNETES_SERVICE_HOST, value: %q}}
      - {op: add, path: /spec/template/spec/containers/0/env/-, value: {name: KUBERNETES_SERVICE_PORT, value: %q}}
      - {op: add, path: /spec/template/spec/containers/0/env/-, value: {name: WINK_ALLOW_UNENFORCED_NETWORK_POLICY, value: "true"}}
      - {op: add, path: /spec/template/spec/containers/0/env/-, value: {name: WINK_WARM, value: "0"}}
  - target: {kind: PersistentVolumeClaim, name: wink-mcp-checkpoints}
    patch: |
      - {op: replace, path: /spec/accessModes, value: [ReadWriteOnce]}
`, rel, namespace, namespace, name, tag, api.Hostname(), api.Port())
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kustomization), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// decodeManifests splits kustomize's output into objects by kind.
func decodeManifests(t *testing.T, rendered string) map[string][]*unstructured.Unstructured {
	t.Helper()
	byKind := map[string][]*unstructured.Unstructured{}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(rendered), 4096)
	for {
		obj := &unstructured.Unstructured{}
		err := dec.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return byKind
		}
		if err != nil {
			t.Fatalf("decoding kustomize's output: %v", err)
		}
		byKind[obj.GetKind()] = append(byKind[obj.GetKind()], obj)
	}
}

// TestKubernetesManifests renders deploy/kubernetes through an overlay with
// `kubectl kustomize`, checks what it makes, applies it to the test node
// in a namespace of its own (a server dry-run first), checks each rule of
// the Role as the ServiceAccount with `kubectl auth can-i --as`, and
// waits for both replicas Ready behind their /healthz probes. A session
// on a replica, reached by the Service's name, makes its workspace Pod
// with the ServiceAccount's rights; a kept workspace's checkpoint taken
// through one replica is listed and restored through the other, and
// listed by a replica Pod that replaced both; scaling to 0 leaves no Pod.
func TestKubernetesManifests(t *testing.T) {
	cs, cfg := needCluster(t)
	image := kubernetesAgentImage(t)
	ns := "wink-deploy-" + randomHex(4)
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The namespace takes its objects and Pods along; the cluster-wide
		// ones are the overlay's, named after it.
		_, _ = kubectlResult(nil, "delete", "namespace", ns, "--wait=true", "--timeout=120s")
		_, _ = kubectlResult(nil, "delete", "clusterrolebinding,clusterrole", ns+"-wink-mcp-nodes", "--ignore-not-found")
	})
	rendered := kubectl(t, nil, "kustomize", manifestsOverlay(t, cfg, ns, image))
	objects := decodeManifests(t, rendered)
	for kind, want := range map[string]int{"ServiceAccount": 1, "Role": 1, "RoleBinding": 1, "ClusterRole": 1, "ClusterRoleBinding": 1,
		"Deployment": 1, "Service": 2, "PodDisruptionBudget": 1, "NetworkPolicy": 1, "PersistentVolumeClaim": 1, "Secret": 0, "Namespace": 0} {
		if got := len(objects[kind]); got != want {
			t.Errorf("kustomize made %d %s; want %d", got, kind, want)
		}
	}
	for _, list := range objects {
		for _, o := range list {
			if n := o.GetNamespace(); n != ns && !strings.HasPrefix(o.GetKind(), "Cluster") {
				t.Errorf("%s %s is in namespace %q; want the overlay's %s", o.GetKind(), o.GetName(), n, ns)
			}
		}
	}
	checkDeployment(t, objects["Deployment"][0], image)

	t.Log(kubectl(t, []byte(rendered), "apply", "--dry-run=server", "-f", "-"))
	applied := time.Now()
	kubectl(t, []byte(rendered), "apply", "-f", "-")
	token := randomHex(16)
	if _, err := cs.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "wink-mcp-tokens"},
		StringData: map[string]string{"tokens": token + "\n"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	checkRole(t, objects["Role"][0], ns)

	kubectl(t, nil, "-n", ns, "rollout", "status", "deployment/"+ns+"-wink-mcp", "--timeout=180s")
	t.Logf("both replicas Ready %v after kubectl apply", time.Since(applied).Round(100*time.Millisecond))
	pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=server"})
	if err != nil || len(pods.Items) < 2 {
		t.Fatalf("the replicas: %v, %v", pods, err)
	}
	begin := time.Now()
	serviceSession(t, pods.Items[0].Status.PodIP, token, "", func(p *proc) {
		if res := p.run("id", "-u"); res.ExitCode != 0 || res.Stdout != "65534\n" {
			t.Errorf("id -u in the workspace a replica made: %+v", res)
		}
	})
	t.Logf("a session on an in-cluster replica, from initialize to its end: %v", time.Since(begin).Round(100*time.Millisecond))
	kept := keptCheckpointAcrossReplicas(t, cs, ns, token, pods.Items[0].Status.PodIP, pods.Items[1].Status.PodIP)
	replacedReplicaFindsCheckpoints(t, cs, ns, token, kept, pods.Items)

	kubectl(t, nil, "-n", ns, "scale", "deployment/"+ns+"-wink-mcp", "--replicas=0")
	waitUntil(t, 90*time.Second, "the replicas to end and their workspace Pods to go", func() bool {
		left, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		return err == nil && len(left.Items) == 0
	})
}

// checkDeployment checks the replicas' Pod template as kustomize made it:
// the image also the agent image, and the hardening.
func checkDeployment(t *testing.T, obj *unstructured.Unstructured, image string) {
	t.Helper()
	var d struct {
		Spec struct {
			Replicas int32 `json:"replicas"`
			Template struct {
				Spec corev1.PodSpec `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &d); err != nil {
		t.Fatal(err)
	}
	s := d.Spec.Template.Spec
	c := s.Containers[0]
	agent := ""
	for _, e := range c.Env {
		if e.Name == "WINK_KUBERNETES_AGENT_IMAGE" {
			agent = e.Value
		}
	}
	sc := c.SecurityContext
	for what, ok := range map[string]bool{
		"2 replicas":                   d.Spec.Replicas == 2,
		"the overlay's image":          c.Image == image,
		"the same image as its agent":  agent == image,
		"not root":                     *s.SecurityContext.RunAsNonRoot && *s.SecurityContext.RunAsUser != 0,
		"no privilege escalation":      !*sc.AllowPrivilegeEscalation && !*sc.Privileged,
		"every capability dropped":     len(sc.Capabilities.Drop) == 1 && sc.Capabilities.Drop[0] == "ALL" && len(sc.Capabilities.Add) == 0,
		"RuntimeDefault seccomp":       sc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault,
		"a read-only root":             *sc.ReadOnlyRootFilesystem,
		"memory, CPU and disk limited": !c.Resources.Limits.Memory().IsZero() && !c.Resources.Limits.Cpu().IsZero() && !c.Resources.Limits.StorageEphemeral().IsZero(),
		"probed on /healthz":           c.ReadinessProbe.HTTPGet.Path == "/healthz" && c.LivenessProbe.HTTPGet.Path == "/healthz",
		"the checkpoints' claim at --checkpoint-dir": mountsClaim(s, c, "-wink-mcp-checkpoints", "/var/lib/wink-mcp/checkpoints") &&
			slices.Contains(c.Args, "--checkpoint-dir=/var/lib/wink-mcp/checkpoints"),
	} {
		if !ok {
			t.Errorf("the Deployment lacks %s: %+v", what, s)
		}
	}
}

// checkRole asks the API server, as the ServiceAccount, for each verb of
// each rule of the Role and for the nodes list of the ClusterRole: yes;
// and for a few it must not have: no.
func checkRole(t *testing.T, obj *unstructured.Unstructured, ns string) {
	t.Helper()
	var role rbacv1.Role
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &role); err != nil {
		t.Fatal(err)
	}
	as := "system:serviceaccount:" + ns + ":" + ns + "-wink-mcp"
	type ask struct{ verb, resource, namespace string }
	var allowed []ask
	for _, r := range role.Rules {
		for _, res := range r.Resources {
			for _, verb := range r.Verbs {
				resource := res // kubectl's form: pods, pods/exec, leases.coordination.k8s.io
				if g := r.APIGroups[0]; g != "" {
					resource = res + "." + g
				}
				allowed = append(allowed, ask{verb, resource, ns})
			}
		}
	}
	allowed = append(allowed, ask{"list", "nodes", ""})
	// docs/kubernetes.md lists the engine's calls: pods 5, pods/exec 2,
	// networkpolicies 2, persistentvolumeclaims 5, leases 5, and nodes list.
	if len(allowed) != 20 {
		t.Errorf("the Role and ClusterRole grant %d verbs; want the 20 docs/kubernetes.md lists: %+v", len(allowed), role.Rules)
	}
	denied := []ask{{"update", "pods", ns}, {"get", "secrets", ns}, {"create", "pods", "default"}, {"watch", "pods", ns},
		{"delete", "networkpolicies.networking.k8s.io", ns}, {"get", "nodes", ""}}
	for _, c := range append(allowed, denied...) {
		want := "yes"
		for _, d := range denied {
			if c == d {
				want = "no"
			}
		}
		args := []string{"auth", "can-i", c.verb, c.resource, "--as", as}
		if c.namespace != "" {
			args = append(args, "-n", c.namespace)
		}
		got, _ := kubectlResult(nil, args...) // can-i exits 1 with "no"
		if strings.TrimSpace(got) != want {
			t.Errorf("can %s %s %s in %q: %q; want %s", as, c.verb, c.resource, c.namespace, strings.TrimSpace(got), want)
		}
	}
}

// serviceSession opens a session on the replica at podIP as a client of
// the Service would (Host: wink-mcp), with query (?workspace=NAME, or ""),
// uses it with use and ends it.
func serviceSession(t *testing.T, podIP, token, query string, use func(p *proc)) {
	t.Helper()
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort(podIP, "8080"))
	}
	tr, err := transport.NewStreamableHTTP("http://wink-mcp:8080/mcp"+query,
		withToken(token, &http.Transport{DialContext: dial}))
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, transport: "http", client: client.NewClient(tr), logs: &logBuffer{}, exited: make(chan struct{})}
	p.initialize()
	defer p.client.Close()
	use(p)
	p.endSession()
}

// mountsClaim says whether container c of the Pod spec s mounts, at path,
// a claim whose name ends with suffix.
func mountsClaim(s corev1.PodSpec, c corev1.Container, suffix, path string) bool {
	for _, v := range s.Volumes {
		if v.PersistentVolumeClaim == nil || !strings.HasSuffix(v.PersistentVolumeClaim.ClaimName, suffix) {
			continue
		}
		for _, m := range c.VolumeMounts {
			if m.Name == v.Name && m.MountPath == path && !m.ReadOnly {
				return true
			}
		}
	}
	return false
}

// keptCheckpointAcrossReplicas checkpoints a kept workspace through the
// replica at first, and lists and restores it through the one at second:
// the replicas share the checkpoints' claim, which the workspace Pod
// does not mount. It returns the workspace's name.
func keptCheckpointAcrossReplicas(t *testing.T, cs *kubernetes.Clientset, ns, token, first, second string) string {
	t.Helper()
	name := "deployed" + randomHex(4)
	serviceSession(t, first, token, "?workspace="+name, func(p *proc) {
		if res := p.run("sh", "-c", "echo through-the-first > f.txt"); res.ExitCode != 0 {
			t.Fatalf("%+v", res)
		}
		var cp tools.WorkspaceCheckpointResult
		decodeStructured(t, p.call("workspace_checkpoint", map[string]any{"message": "first replica"}), &cp)
		workspacePods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "io.wink-mcp.managed"})
		if err != nil || len(workspacePods.Items) != 1 {
			t.Fatalf("the kept workspace's Pod: %v, %v", workspacePods, err)
		}
		for _, v := range workspacePods.Items[0].Spec.Volumes {
			if v.PersistentVolumeClaim != nil && strings.HasSuffix(v.PersistentVolumeClaim.ClaimName, "-wink-mcp-checkpoints") {
				t.Errorf("the workspace Pod mounts the checkpoints' claim: %+v", v)
			}
		}
		p.run("sh", "-c", "echo changed > f.txt")
	})
	waitUntil(t, 30*time.Second, "the kept workspace's Lease to go", func() bool {
		_, err := cs.CoordinationV1().Leases(ns).Get(context.Background(), keptObjectName(name), metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	serviceSession(t, second, token, "?workspace="+name, func(p *proc) {
		var list tools.WorkspaceCheckpointsResult
		decodeStructured(t, p.call("workspace_checkpoints", nil), &list)
		if len(list.Checkpoints) != 1 || list.Checkpoints[0].Message != "first replica" {
			t.Fatalf("the second replica lists %+v; want the first's checkpoint", list.Checkpoints)
		}
		var r tools.WorkspaceRestoreResult
		decodeStructured(t, p.call("workspace_restore", map[string]any{"checkpoint": list.Checkpoints[0].ID}), &r)
		if got := p.run("cat", "f.txt").Stdout; got != "through-the-first\n" {
			t.Errorf("after the second replica's restore f.txt = %q", got)
		}
	})
	return name
}

// replacedReplicaFindsCheckpoints deletes the replica Pods old and opens
// the kept workspace name through a replica Pod that replaced them: its
// two checkpoints (the first replica's and the restore's automatic one)
// are there.
func replacedReplicaFindsCheckpoints(t *testing.T, cs *kubernetes.Clientset, ns, token, name string, old []corev1.Pod) {
	t.Helper()
	waitUntil(t, 30*time.Second, "the kept workspace's Lease to go", func() bool {
		_, err := cs.CoordinationV1().Leases(ns).Get(context.Background(), keptObjectName(name), metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	for _, p := range old {
		kubectl(t, nil, "-n", ns, "delete", "pod", p.Name, "--wait=true")
	}
	var replaced *corev1.Pod
	waitUntil(t, 180*time.Second, "a replica Pod that replaced them to be Ready", func() bool {
		pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=server"})
		if err != nil {
			return false
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Status.PodIP != "" && podReady(p) && !slices.ContainsFunc(old, func(o corev1.Pod) bool { return o.UID == p.UID }) {
				replaced = &p
				return true
			}
		}
		return false
	})
	serviceSession(t, replaced.Status.PodIP, token, "?workspace="+name, func(s *proc) {
		var list tools.WorkspaceCheckpointsResult
		decodeStructured(t, s.call("workspace_checkpoints", nil), &list)
		if len(list.Checkpoints) != 2 || list.Checkpoints[0].Message != "first replica" {
			t.Errorf("a replaced replica lists %+v; want the first replica's and the restore's", list.Checkpoints)
		}
	})
}

// podReady says whether the Pod's Ready condition is true.
func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
