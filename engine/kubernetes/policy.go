package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
)

// PolicyName is the name of the deny-all NetworkPolicy the engine keeps in
// its namespace for the workspace Pods.
const PolicyName = "wink-mcp-workspaces-deny-all"

// ErrPolicyMissing is wrapped by Create's error when the deny-all
// NetworkPolicy is not in the namespace.
var ErrPolicyMissing = errors.New("the deny-all NetworkPolicy of the workspace Pods is missing")

// denyAllPolicy returns the NetworkPolicy that denies every Pod with the
// label managedLabel=true all ingress and all egress: both policy types,
// no rule. A workspace's egress goes only through the agent's proxy tunnel,
// over the exec stream, which no Pod network carries.
func denyAllPolicy(namespace, managedLabel string) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: PolicyName, Namespace: namespace},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{managedLabel: "true"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		},
	}
}

// ensurePolicy creates the deny-all NetworkPolicy when it is missing, and
// checks the one there (checkPolicy).
func (e *Engine) ensurePolicy(ctx context.Context, client k8s.Interface) error {
	want := denyAllPolicy(e.opts.Namespace, e.opts.ManagedLabel)
	policies := client.NetworkingV1().NetworkPolicies(e.opts.Namespace)
	got, err := policies.Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		got, err = policies.Get(ctx, PolicyName, metav1.GetOptions{})
	}
	if err != nil {
		return fmt.Errorf("ensuring NetworkPolicy %s in namespace %s: %w", PolicyName, e.opts.Namespace, err)
	}
	return checkPolicy(got, e.opts.ManagedLabel)
}

// requirePolicy reads the deny-all NetworkPolicy back and checks it; it
// returns an error wrapping ErrPolicyMissing when it is not there.
func (e *Engine) requirePolicy(ctx context.Context, client k8s.Interface) error {
	got, err := client.NetworkingV1().NetworkPolicies(e.opts.Namespace).Get(ctx, PolicyName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%w (NetworkPolicy %s in namespace %s): a workspace Pod would have the cluster's network; "+
			"restart wink-mcp to make it again, or apply it", ErrPolicyMissing, PolicyName, e.opts.Namespace)
	}
	if err != nil {
		return fmt.Errorf("reading NetworkPolicy %s: %w", PolicyName, err)
	}
	return checkPolicy(got, e.opts.ManagedLabel)
}

// checkPolicy returns an error naming each way the NetworkPolicy got
// differs from the deny-all one: it must select exactly the workspace Pods,
// have both policy types, and no rule.
func checkPolicy(got *networkingv1.NetworkPolicy, managedLabel string) error {
	var diffs []string
	sel := got.Spec.PodSelector
	if want := map[string]string{managedLabel: "true"}; !maps.Equal(sel.MatchLabels, want) || len(sel.MatchExpressions) > 0 {
		diffs = append(diffs, fmt.Sprintf("spec.podSelector selects %s, not exactly %s=true", metav1.FormatLabelSelector(&sel), managedLabel))
	}
	for _, t := range []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress} {
		if !slices.Contains(got.Spec.PolicyTypes, t) {
			diffs = append(diffs, fmt.Sprintf("spec.policyTypes lacks %s", t))
		}
	}
	if n := len(got.Spec.Ingress); n > 0 {
		diffs = append(diffs, fmt.Sprintf("spec.ingress has %d rule(s) allowing traffic in", n))
	}
	if n := len(got.Spec.Egress); n > 0 {
		diffs = append(diffs, fmt.Sprintf("spec.egress has %d rule(s) allowing traffic out", n))
	}
	if len(diffs) == 0 {
		return nil
	}
	return fmt.Errorf("NetworkPolicy %s in namespace %s is not deny-all: %s; delete it (wink-mcp makes it again) or make it deny all",
		got.Name, got.Namespace, strings.Join(diffs, "; "))
}
