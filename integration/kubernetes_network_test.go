package integration

import (
	"context"
	"encoding/json"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// TestKubernetesNetworkPolicy runs the engine on the test node, where
// kube-router's firewall enforces NetworkPolicies, in a namespace of its
// own: without --allow-unenforced-network-policy the server makes the
// deny-all policy and a workspace, the probe said enforced, nothing warns,
// and no probe Pod is left.
func TestKubernetesNetworkPolicy(t *testing.T) {
	cs, _ := needCluster(t)
	ctx := context.Background()
	ns := freshNamespace(t, cs, "wink-policy-")

	p := startKubernetes(t, cs, "wk"+randomHex(4), "", "--namespace", ns)
	if res := p.run("true"); res.ExitCode != 0 {
		t.Fatalf("true: %+v", res)
	}
	rec := p.waitLog(0, "network policy probed", nil)
	if rec["enforced"] != true || rec["target"] == "" {
		t.Errorf("probe record %v; want enforced true and a target (is kube-router running? see docs/kubernetes-test-cluster.md)", rec)
	}
	t.Logf("the probe took %v ms", rec["duration_ms"])
	if p.logs.find("NETWORK POLICIES ARE NOT ENFORCED: --allow-unenforced-network-policy makes workspace Pods that reach the cluster's network", nil) != nil {
		t.Errorf("the server warns that policies are not enforced where they are")
	}

	policy, err := cs.NetworkingV1().NetworkPolicies(ns).Get(ctx, "wink-mcp-workspaces-deny-all", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the deny-all policy: %v", err)
	}
	sel := policy.Spec.PodSelector
	if len(sel.MatchLabels) != 1 || sel.MatchLabels["io.wink-mcp.managed"] != "true" || len(sel.MatchExpressions) > 0 {
		t.Errorf("the policy selects %v; want exactly io.wink-mcp.managed=true", sel)
	}
	if types := policy.Spec.PolicyTypes; len(types) != 2 || len(policy.Spec.Ingress) > 0 || len(policy.Spec.Egress) > 0 {
		t.Errorf("the policy has types %v, %d ingress and %d egress rules; want Ingress and Egress, no rule", types, len(policy.Spec.Ingress), len(policy.Spec.Egress))
	}
	if pods := workspacePodsIn(t, cs, ns); len(pods) != 1 {
		t.Fatalf("Pods %v; want one the policy selects", pods)
	}
	noProbeLeft(t, cs, ns)
}

// noProbeLeft fails the test when a network probe Pod is left in ns.
func noProbeLeft(t *testing.T, cs *kubernetes.Clientset, ns string) {
	t.Helper()
	probes, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "io.wink-mcp.network-probe=true"})
	if err != nil || len(probes.Items) > 0 {
		t.Errorf("probe Pods left in %s: %d (%v)", ns, len(probes.Items), err)
	}
}

// TestKubernetesNetworkPolicyWeakened: in a namespace whose
// wink-mcp-workspaces-deny-all policy lets Pods out, the server refuses
// to make a workspace, even with --allow-unenforced-network-policy, and
// names the rule; it makes no Pod, not even a probe.
func TestKubernetesNetworkPolicyWeakened(t *testing.T) {
	cs, _ := needCluster(t)
	ns := weakenedNamespace(t, cs)
	for _, args := range [][]string{{"--namespace", ns}, {"--namespace", ns, "--allow-unenforced-network-policy"}} {
		p := startKubernetes(t, cs, "wk"+randomHex(4), "", args...)
		msg := p.toolErr("podman_shell", map[string]any{"command": []string{"true"}})
		if !strings.Contains(msg, "is not deny-all: spec.egress has 1 rule(s) allowing traffic out") {
			t.Errorf("with %v, the refusal %q does not name the egress rule", args, msg)
		}
		if pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{}); err != nil || len(pods.Items) > 0 {
			t.Errorf("with %v, a refused server made Pods: %v (%v)", args, pods, err)
		}
	}
}

// weakenedNamespace makes a test namespace whose deny-all policy, named
// as the engine's, allows every Pod's traffic out, and returns its name.
func weakenedNamespace(t *testing.T, cs *kubernetes.Clientset) string {
	t.Helper()
	ns := freshNamespace(t, cs, "wink-weakened-")
	weak := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "wink-mcp-workspaces-deny-all"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"io.wink-mcp.managed": "true"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Egress:      []networkingv1.NetworkPolicyEgressRule{{}},
		},
	}
	if _, err := cs.NetworkingV1().NetworkPolicies(ns).Create(context.Background(), weak, metav1.CreateOptions{}); err != nil {
		t.Fatalf("making the weakened policy: %v", err)
	}
	return ns
}

// freshNamespace makes a namespace named prefix..., deleted at cleanup,
// whose Pods are admitted, and returns its name.
func freshNamespace(t *testing.T, cs *kubernetes.Clientset, prefix string) string {
	t.Helper()
	ctx := context.Background()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("making a namespace: %v", err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	// Pods are admitted once the namespace's default service account exists.
	waitUntil(t, 30*time.Second, "the namespace's default service account", func() bool {
		_, err := cs.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})
	return ns.Name
}

// apiHost and apiPort are the API server's address, from the kubeconfig.
func apiHost(t *testing.T) string { return apiURL(t).Hostname() }
func apiPort(t *testing.T) string { return apiURL(t).Port() }

func apiURL(t *testing.T) *url.URL {
	t.Helper()
	_, cfg := needCluster(t)
	u, err := url.Parse(cfg.Host)
	if err != nil || u.Port() == "" {
		t.Fatalf("the API server's address %q: %v", cfg.Host, err)
	}
	return u
}

// workspacePodsIn lists the names of the workspace Pods in namespace ns.
func workspacePodsIn(t *testing.T, cs *kubernetes.Clientset, ns string) []string {
	t.Helper()
	list, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "io.wink-mcp.managed=true"})
	if err != nil {
		t.Fatalf("listing Pods: %v", err)
	}
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	return names
}

// TestKubernetesDoctor runs doctor with --engine kubernetes on the test
// node: in a namespace of its own, its lines say what is true of a Pod,
// and the network line is ok, as the policy is enforced; in a namespace
// whose deny-all policy lets Pods out, the network line fails naming the
// rule, with --allow-unenforced-network-policy too; no probe Pod is left.
func TestKubernetesDoctor(t *testing.T) {
	cs, _ := needCluster(t)
	ns := freshNamespace(t, cs, "wink-doctor-")
	args := []string{"--engine", "kubernetes", "--kubeconfig", clusterKubeconfig, "--kubernetes-agent-image", kubernetesAgentImage(t),
		"--image", pythonImage, "--name-prefix", "wd" + randomHex(4)}

	out, code := doctor(t, append(args, "--namespace", ns)...)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for check, want := range map[string]string{
		"podman":    "ok    podman        not needed: each workspace is a Pod",
		"service":   "ok    service       the Kubernetes API server https://",
		"runtime":   "no pids limit of wink-mcp's",
		"ulimits":   "ok    ulimits       not set: --nofile and --nproc are no Pod settings",
		"egress":    "ok    egress        each Pod's eth0 is cut off by NetworkPolicy " + ns + "/wink-mcp-workspaces-deny-all (deny-all), enforced",
		"container": "its eth0 cut off by NetworkPolicy " + ns + "/wink-mcp-workspaces-deny-all",
	} {
		if l := line(out, check); !strings.Contains(l, want) {
			t.Errorf("%s line %q; want %q", check, l, want)
		}
	}
	if !strings.Contains(out, "Kubernetes API server of "+clusterKubeconfig) || strings.Contains(out, "Podman service") {
		t.Errorf("the header does not name the Kubernetes API server:\n%s", out)
	}

	noProbeLeft(t, cs, ns)

	weakened := weakenedNamespace(t, cs)
	for _, extra := range [][]string{{"--namespace", weakened}, {"--namespace", weakened, "--allow-unenforced-network-policy"}} {
		out, code = doctor(t, append(args, extra...)...)
		if l := line(out, "egress"); code == 0 || !strings.HasPrefix(l, "FAIL  egress        cannot ensure or probe the Pods' network policy") ||
			!strings.Contains(l, "is not deny-all: spec.egress has 1 rule(s) allowing traffic out") {
			t.Errorf("with %v: exit %d, egress line %q; want a failure naming the egress rule:\n%s", extra, code, l, out)
		}
	}
	noProbeLeft(t, cs, weakened)
}

// reachProgram tries, from wherever it runs, each way out a workspace
// could take, and prints what each got as JSON: "ok", or the error. Its
// arguments: the API server's host and port, and a peer Pod's IP (a TCP
// listener on 8080, a UDP echo on 5353).
const reachProgram = `import json, socket, struct, sys
api, port, peer = sys.argv[1], int(sys.argv[2]), sys.argv[3]
out = {}
def attempt(name, f):
    try:
        f()
        out[name] = "ok"
    except Exception as e:
        out[name] = "%s: %s" % (type(e).__name__, e)
def tcp(host, port):
    return lambda: socket.create_connection((host, port), timeout=3).close()
def dns():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(3)
    q = struct.pack(">HHHHHH", 0x5a5a, 0x0100, 1, 0, 0, 0) + b"\x07example\x03org\x00" + struct.pack(">HH", 1, 1)
    s.sendto(q, (peer, 5353))
    if s.recvfrom(512)[0][:2] != q[:2]:
        raise ValueError("not the answer to the query")
def raw():
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP).close()
def ping():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)
    s.settimeout(3)
    s.sendto(struct.pack(">BBHHH", 8, 0, 0, 0, 1) + b"wink", (peer, 0))
    s.recvfrom(512)
attempt("tcp to the API server", tcp(api, port))
attempt("tcp to a Pod", tcp(peer, 8080))
attempt("udp DNS query to a Pod", dns)
attempt("raw socket", raw)
attempt("icmp echo to a Pod (ping socket)", ping)
print(json.dumps(out))
`

// peerProgram serves what reachProgram tries on a peer Pod: TCP on 8080,
// a UDP echo on 5353.
const peerProgram = `import socket, threading
def tcp():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("", 8080))
    s.listen(16)
    while True:
        c, _ = s.accept()
        c.sendall(b"peer")
        c.close()
threading.Thread(target=tcp, daemon=True).start()
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind(("", 5353))
while True:
    data, addr = u.recvfrom(512)
    u.sendto(data, addr)
`

// TestKubernetesWorkspaceCutOff shows, on the test node, that the
// enforced deny-all policy, not a dead network, cuts a workspace Pod off:
// from a plain Pod of the same namespace and image, without the managed
// label, a TCP connect to the API server and to a peer Pod, and a DNS
// query over UDP to it, get through; from the workspace, through
// podman_shell, each fails, and so do a raw socket (CAP_NET_RAW is
// dropped) and an ICMP echo through an unprivileged ping socket; and the
// plain Pod cannot get into the workspace Pod.
func TestKubernetesWorkspaceCutOff(t *testing.T) {
	cs, cfg := needCluster(t)
	ctx := context.Background()
	prefix := "wn" + randomHex(4)
	p := startKubernetes(t, cs, prefix, "")

	peer := plainPod(t, cs, prefix+"-peer", "python3", "-c", peerProgram)
	control := plainPod(t, cs, prefix+"-control", "sleep", "infinity")
	argv := []string{"python3", "-c", reachProgram, apiHost(t), apiPort(t), peer.Status.PodIP}

	// The control Pod: the network is there, and the peer answers.
	var got map[string]string
	waitUntil(t, 30*time.Second, "the peer Pod to answer the control Pod", func() bool {
		stdout, stderr, err := execInPod(ctx, cs, cfg, control, argv...)
		if err != nil {
			t.Fatalf("the reach program in the control Pod: %v (%s)", err, stderr)
		}
		got = reachResults(t, stdout)
		return got["tcp to a Pod"] == "ok"
	})
	t.Logf("from a plain Pod: %v", got)
	for _, way := range []string{"tcp to the API server", "tcp to a Pod", "udp DNS query to a Pod"} {
		if got[way] != "ok" {
			t.Errorf("%s failed from a plain Pod (%s): the test node's network, not the policy, stops it", way, got[way])
		}
	}
	pingable := got["icmp echo to a Pod (ping socket)"] == "ok"

	// The workspace: everything fails.
	res := p.shell(map[string]any{"command": argv, "timeout_seconds": 60})
	if res.ExitCode != 0 {
		t.Fatalf("the reach program in the workspace exited %d: %s", res.ExitCode, res.Stderr)
	}
	got = reachResults(t, res.Stdout)
	t.Logf("from the workspace Pod: %v (ICMP echo from a plain Pod: %v)", got, pingable)
	for way, outcome := range got {
		if outcome == "ok" {
			t.Errorf("%s got through from the workspace Pod", way)
		}
	}
	if !strings.HasPrefix(got["raw socket"], "PermissionError") {
		t.Errorf("a raw socket in the workspace: %s; want PermissionError (CAP_NET_RAW dropped)", got["raw socket"])
	}

	// And nothing gets in: the workspace serves what the peer serves, which
	// its own loopback and the node reach, and the control Pod does not.
	p.shell(map[string]any{"command": []string{"python3", "-c", peerProgram}, "background": true})
	listening := []string{"python3", "-c", "import socket; socket.create_connection(('127.0.0.1', 8080), timeout=1).close()"}
	waitUntil(t, 30*time.Second, "the workspace's listener", func() bool { return p.shell(map[string]any{"command": listening}).ExitCode == 0 })
	var workspaceIP string
	for _, pod := range podsNamed(t, cs, prefix) {
		if pod.Labels["io.wink-mcp.managed"] == "true" {
			workspaceIP = pod.Status.PodIP
		}
	}
	// The node itself may reach a Pod (kube-router lets it, for the
	// kubelet's health checks): the listener answers on the Pod's address.
	if conn, err := net.DialTimeout("tcp", net.JoinHostPort(workspaceIP, "8080"), 3*time.Second); err != nil {
		t.Fatalf("the workspace's listener does not answer the node on %s: %v", workspaceIP, err)
	} else {
		conn.Close()
	}
	stdout, stderr, err := execInPod(ctx, cs, cfg, control, "python3", "-c", reachProgram, apiHost(t), apiPort(t), workspaceIP)
	if err != nil {
		t.Fatalf("the reach program in the control Pod: %v (%s)", err, stderr)
	}
	got = reachResults(t, stdout)
	t.Logf("from a plain Pod to the workspace Pod %s: %v", workspaceIP, got)
	for _, way := range []string{"tcp to a Pod", "udp DNS query to a Pod"} {
		if got[way] == "ok" {
			t.Errorf("%s: a plain Pod got into the workspace Pod", way)
		}
	}
}

// reachResults decodes reachProgram's output.
func reachResults(t *testing.T, stdout string) map[string]string {
	t.Helper()
	var got map[string]string
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || len(got) != 5 {
		t.Fatalf("the reach program printed %q (%v)", stdout, err)
	}
	return got
}

// plainPod runs argv in a Pod of the workspace image named name, hardened
// as a workspace but without the managed label, so no policy selects it,
// deleted at cleanup; it returns the Pod once Running.
func plainPod(t *testing.T, cs *kubernetes.Clientset, name string, argv ...string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	pod := smokePod()
	pod.GenerateName, pod.Name = "", name
	pod.Spec.Containers[0].Command = argv
	if _, err := cs.CoreV1().Pods(testNamespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("making Pod %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().Pods(testNamespace).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	waitUntil(t, 60*time.Second, "Pod "+name+" Running", func() bool {
		var err error
		pod, err = cs.CoreV1().Pods(testNamespace).Get(ctx, name, metav1.GetOptions{})
		return err == nil && pod.Status.Phase == corev1.PodRunning && pod.Status.PodIP != ""
	})
	return pod
}
