package kubernetes

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// quiet is a logger that writes nothing.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// apiServerSlice is the `kubernetes` Service's EndpointSlice of a cluster
// whose API server listens on 10.0.0.1:6443.
func apiServerSlice() *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{"kubernetes.io/service-name": "kubernetes"}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}}},
		Ports:     []discoveryv1.EndpointPort{{Port: ptr.To[int32](6443)}},
	}
}

// probingClient returns a fake cluster whose probe Pods end at once with
// exit, recording the command each ran.
func probingClient(exit int32, commands *[][]string) *fake.Clientset {
	client := fake.NewClientset(apiServerSlice())
	client.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		pod := action.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		if pod.Labels[probeLabel] == "true" {
			*commands = append(*commands, pod.Spec.Containers[0].Command)
			pod.Status = corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{Name: "probe",
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit}}}}}
		}
		return false, nil, nil
	})
	return client
}

// TestNetworkMakesThePolicyAndProbes prepares an engine on a cluster that
// has no policy: it must create the deny-all one, run a probe Pod carrying
// the managed label against the API server's endpoint, delete it, and map
// the probe's exit to enforced or not, and that to a refusal or a warning.
func TestNetworkMakesThePolicyAndProbes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		exit     int32
		allow    bool
		enforced bool
		warn     bool
		refused  bool
	}{
		{"blocked", ProbeBlocked, false, true, false, false},
		{"connected, not allowed", ProbeConnected, false, false, false, true},
		{"connected, allowed", ProbeConnected, true, false, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var commands [][]string
			client := probingClient(tc.exit, &commands)
			opts := testOptions
			opts.AllowUnenforcedNetworkPolicy = tc.allow
			e := newUnprobed(opts, client, quiet)
			ctx := context.Background()
			n, err := e.NetworkPolicy(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n.Enforced != tc.enforced || n.Target != "10.0.0.1:6443" {
				t.Errorf("NetworkPolicy = %+v; want enforced %v, target 10.0.0.1:6443", n, tc.enforced)
			}
			if len(commands) != 1 || len(commands[0]) != 4 || commands[0][1] != ProbeCommand || commands[0][2] != "10.0.0.1:6443" || commands[0][3] != ProbeSettle.String() {
				t.Errorf("probe commands %v; want one %s 10.0.0.1:6443 %v", commands, ProbeCommand, ProbeSettle)
			}
			policy, err := client.NetworkingV1().NetworkPolicies("wink").Get(ctx, PolicyName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := checkPolicy(policy, opts.ManagedLabel); err != nil {
				t.Error(err)
			}
			if pods, _ := client.CoreV1().Pods("wink").List(ctx, metav1.ListOptions{}); len(pods.Items) > 0 {
				t.Errorf("probe Pod left: %s", pods.Items[0].Name)
			}
			err = verdict(n)
			if n.Allowed != tc.warn || (err != nil) != tc.refused || (err != nil && (!errors.Is(err, ErrPolicyUnenforced) || !strings.Contains(err.Error(), AllowFlag))) {
				t.Errorf("allowed %v, verdict %v; want allowed %v, refused %v naming %s", n.Allowed, err, tc.warn, tc.refused, AllowFlag)
			}
			createErr := e.Create(ctx, testSpec())
			if (createErr != nil) != tc.refused || (createErr != nil && !errors.Is(createErr, ErrPolicyUnenforced)) {
				t.Errorf("Create = %v; want refused %v", createErr, tc.refused)
			}
			if _, err := e.NetworkPolicy(ctx); err != nil || len(commands) != 1 {
				t.Errorf("a second NetworkPolicy probed again (%d probes, %v); want the first answer kept", len(commands), err)
			}
		})
	}
}

// TestNetworkRefusesAPolicyThatAllows finds a policy of the deny-all
// policy's name that lets something through: preparing must fail naming it.
func TestNetworkRefusesAPolicyThatAllows(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		change func(*networkingv1.NetworkPolicy)
		want   string
	}{
		{"egress rule", func(p *networkingv1.NetworkPolicy) {
			p.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{}}
		}, "spec.egress has 1 rule"},
		{"ingress rule", func(p *networkingv1.NetworkPolicy) {
			p.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{}}
		}, "spec.ingress has 1 rule"},
		{"ingress only", func(p *networkingv1.NetworkPolicy) {
			p.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
		}, "spec.policyTypes lacks Egress"},
		{"other Pods", func(p *networkingv1.NetworkPolicy) {
			p.Spec.PodSelector.MatchLabels = map[string]string{"app": "other"}
		}, "spec.podSelector selects app=other"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			policy := denyAllPolicy("wink", testOptions.ManagedLabel)
			tc.change(policy)
			var commands [][]string
			client := probingClient(ProbeBlocked, &commands)
			if err := client.Tracker().Add(policy); err != nil {
				t.Fatal(err)
			}
			e := newUnprobed(testOptions, client, quiet)
			_, err := e.NetworkPolicy(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), PolicyName) {
				t.Errorf("NetworkPolicy = %v; want an error naming %s and %q", err, PolicyName, tc.want)
			}
			if err := e.Create(context.Background(), testSpec()); err == nil {
				t.Error("Create made a Pod under a policy that allows traffic")
			}
		})
	}
}

// TestCreateRefusesWithoutThePolicy deletes the policy after the engine
// prepared: Create must refuse, make no Pod, and say so.
func TestCreateRefusesWithoutThePolicy(t *testing.T) {
	t.Parallel()
	client := fake.NewClientset()
	e := newWithClient(testOptions, client, quiet)
	ctx := context.Background()
	if err := client.NetworkingV1().NetworkPolicies("wink").Delete(ctx, PolicyName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.Create(ctx, testSpec()); !errors.Is(err, ErrPolicyMissing) {
		t.Errorf("Create = %v; want ErrPolicyMissing", err)
	}
	if pods, _ := client.CoreV1().Pods("wink").List(ctx, metav1.ListOptions{}); len(pods.Items) > 0 {
		t.Errorf("Create made Pod %s without the policy", pods.Items[0].Name)
	}
}

// TestNetworkDeletesLeftoverProbes leaves an old probe Pod and a young one:
// preparing deletes the old one only (the young one may be another
// server's, still running).
func TestNetworkDeletesLeftoverProbes(t *testing.T) {
	t.Parallel()
	var commands [][]string
	client := probingClient(ProbeBlocked, &commands)
	old := probePod(probePrefix+"old", "10.0.0.1:6443", "", testOptions)
	old.CreationTimestamp = metav1.NewTime(metav1.Now().Add(-2 * probeDeadline))
	young := probePod(probePrefix+"young", "10.0.0.1:6443", "", testOptions)
	young.CreationTimestamp = metav1.Now()
	for _, p := range []*corev1.Pod{old, young} {
		if err := client.Tracker().Add(p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := newUnprobed(testOptions, client, quiet).NetworkPolicy(context.Background()); err != nil {
		t.Fatal(err)
	}
	pods, _ := client.CoreV1().Pods("wink").List(context.Background(), metav1.ListOptions{})
	if len(pods.Items) != 1 || pods.Items[0].Name != young.Name {
		t.Errorf("Pods left %v; want only %s", pods.Items, young.Name)
	}
}
