package integration

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestKubernetesNetworkPolicy runs the engine on the test node, whose
// bridge CNI enforces no NetworkPolicy: without
// --allow-unenforced-network-policy the server refuses to make a workspace
// and names the flag; with it, the deny-all policy is in the namespace, the
// probe said not enforced, the log warns, and no probe Pod is left.
func TestKubernetesNetworkPolicy(t *testing.T) {
	cs, _ := needCluster(t)
	ctx := context.Background()

	prefix := "wk" + randomHex(4)
	refused := startKubernetesAs(t, "stdio", cs, prefix, "")
	msg := refused.toolErr("podman_shell", map[string]any{"command": []string{"true"}})
	if !strings.Contains(msg, "--allow-unenforced-network-policy") || !strings.Contains(msg, "does not enforce NetworkPolicies") {
		t.Errorf("the refusal %q does not name --allow-unenforced-network-policy", msg)
	}
	if left := podsNamed(t, cs, prefix); len(left) > 0 {
		t.Errorf("a refused server made Pod %s", left[0].Name)
	}

	prefix = "wk" + randomHex(4)
	p := startKubernetes(t, cs, prefix, "")
	if res := p.run("true"); res.ExitCode != 0 {
		t.Fatalf("true: %+v", res)
	}
	rec := p.waitLog(0, "network policy probed", nil)
	if rec["enforced"] != false || rec["target"] == "" {
		t.Errorf("probe record %v; want enforced false and a target", rec)
	}
	t.Logf("the probe took %v ms", rec["duration_ms"])
	p.waitLog(0, "NETWORK POLICIES ARE NOT ENFORCED: --allow-unenforced-network-policy makes workspace Pods that reach the cluster's network", nil)

	policy, err := cs.NetworkingV1().NetworkPolicies(testNamespace).Get(ctx, "wink-mcp-workspaces-deny-all", metav1.GetOptions{})
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
	pods := podsNamed(t, cs, prefix)
	if len(pods) != 1 || pods[0].Labels["io.wink-mcp.managed"] != "true" {
		t.Fatalf("Pods %v; want one the policy selects", pods)
	}
	probes, err := cs.CoreV1().Pods(testNamespace).List(ctx, metav1.ListOptions{LabelSelector: "io.wink-mcp.network-probe=true"})
	if err != nil || len(probes.Items) > 0 {
		t.Errorf("probe Pods left: %v (%v)", probes, err)
	}
}

// TestKubernetesDoctor runs doctor with --engine kubernetes on the test
// node, which enforces no NetworkPolicy: its lines say what is true of a
// Pod; the network line fails without --allow-unenforced-network-policy
// and warns with it, when the container check accepts the Pod's eth0; no
// probe Pod is left.
func TestKubernetesDoctor(t *testing.T) {
	cs, _ := needCluster(t)
	prefix := "wd" + randomHex(4)
	t.Cleanup(func() { deletePods(cs, prefix) })
	args := []string{"--engine", "kubernetes", "--kubeconfig", clusterKubeconfig, "--kubernetes-agent-image", kubernetesAgentImage(t),
		"--namespace", testNamespace, "--image", pythonImage, "--name-prefix", prefix}

	out, code := doctor(t, args...)
	if code == 0 || !strings.HasPrefix(line(out, "egress"), "FAIL  egress        every workspace would be refused") ||
		!strings.Contains(out, "or pass --allow-unenforced-network-policy") {
		t.Errorf("without the flag: exit %d, want a failed network line naming the flag:\n%s", code, out)
	}

	out, code = doctor(t, append(args, "--allow-unenforced-network-policy")...)
	if code != 0 {
		t.Fatalf("exit %d with the flag:\n%s", code, out)
	}
	for check, want := range map[string]string{
		"podman":    "ok    podman        not needed: each workspace is a Pod",
		"service":   "ok    service       the Kubernetes API server https://",
		"runtime":   "no pids limit of wink-mcp's",
		"ulimits":   "ok    ulimits       not set: --nofile and --nproc are no Pod settings",
		"egress":    "warn  egress        NOT ENFORCED (--allow-unenforced-network-policy)",
		"container": "its eth0 NOT cut off (NetworkPolicy " + testNamespace + "/wink-mcp-workspaces-deny-all unenforced",
	} {
		if l := line(out, check); !strings.Contains(l, want) {
			t.Errorf("%s line %q; want %q", check, l, want)
		}
	}
	if !strings.Contains(out, "Kubernetes API server of "+clusterKubeconfig) || strings.Contains(out, "Podman service") {
		t.Errorf("the header does not name the Kubernetes API server:\n%s", out)
	}
	probes, err := cs.CoreV1().Pods(testNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: "io.wink-mcp.network-probe=true"})
	if err != nil || len(probes.Items) > 0 {
		t.Errorf("probe Pods left: %v (%v)", probes, err)
	}
}
