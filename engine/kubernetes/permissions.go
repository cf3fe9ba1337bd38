package kubernetes

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wink-mcp/wink-mcp/engine"
)

// The engine says which of its calls its credentials lack.
var _ engine.PermissionChecker = (*Engine)(nil)

// Rule is the calls of the engine on one resource, as an RBAC rule grants
// them. docs/kubernetes.md lists the same rules, as a Role.
type Rule struct {
	// Group and Resource name the resource ("" for the core group;
	// "pods/exec" for a subresource).
	Group, Resource string
	Verbs           []string
	// Namespace is where the engine calls: "" for its own namespace
	// (Options.Namespace), "-" for a cluster-scoped resource.
	Namespace string
	// Optional, when set, says what the engine does without the rule.
	Optional string
}

// clusterScoped is Rule.Namespace for a resource of no namespace.
const clusterScoped = "-"

// Rules are every call the engine makes: in its namespace, the workspace
// Pods (made, waited for, listed by the sweep, a kept workspace's
// relabelled by the server that adopts it, deleted), the exec stream
// of each (the SPDY fallback is a POST, create; a WebSocket upgrade a GET,
// which older API servers authorise as get only), the deny-all
// NetworkPolicy (made once, read back and before each Pod), the
// workspaces' PersistentVolumeClaims (made, read back, listed by the sweep
// and the kept workspaces' list, a kept one's record patched, deleted),
// and the Leases of instances and kept workspaces (made, renewed, read and
// listed by the sweep, deleted);
// in "default", the API server's EndpointSlice, the network probe's
// address; the nodes, to choose among --image choices and for the probe's
// address when the EndpointSlice cannot be read.
var Rules = []Rule{
	{Resource: "pods", Verbs: []string{"create", "get", "list", "patch", "delete"}},
	{Resource: "pods/exec", Verbs: []string{"create", "get"}},
	{Group: "networking.k8s.io", Resource: "networkpolicies", Verbs: []string{"create", "get"}},
	{Resource: "persistentvolumeclaims", Verbs: []string{"create", "get", "list", "patch", "delete"}},
	{Group: "coordination.k8s.io", Resource: "leases", Verbs: []string{"create", "get", "list", "update", "delete"}},
	{Group: "discovery.k8s.io", Resource: "endpointslices", Verbs: []string{"list"}, Namespace: "default",
		Optional: "the network probe dials a node's kubelet port instead of the API server"},
	{Resource: "nodes", Verbs: []string{"list"}, Namespace: clusterScoped,
		Optional: "the first --image choice is used without asking which a node has"},
}

// CheckPermissions asks the API server, with a SelfSubjectAccessReview
// per verb of Rules, which calls the engine's credentials may make.
func (e *Engine) CheckPermissions(ctx context.Context) (_ engine.PermissionReport, err error) {
	client, c, end, err := e.call(ctx)
	if err != nil {
		return engine.PermissionReport{}, err
	}
	defer end(&err)
	report := engine.PermissionReport{Scope: "in namespace " + e.opts.Namespace}
	var fixes []string
	for _, r := range Rules {
		namespace := r.Namespace
		switch namespace {
		case "":
			namespace = e.opts.Namespace
		case clusterScoped:
			namespace = ""
		}
		resource, sub, _ := strings.Cut(r.Resource, "/")
		var denied []string
		for _, verb := range r.Verbs {
			review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb, Group: r.Group, Resource: resource, Subresource: sub},
			}}
			got, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(c, review, metav1.CreateOptions{})
			if err != nil {
				return engine.PermissionReport{}, fmt.Errorf("asking whether wink-mcp may %s %s (SelfSubjectAccessReview): %w", verb, r.Resource, err)
			}
			report.Checked++
			if !got.Status.Allowed {
				denied = append(denied, verb)
			}
		}
		if len(denied) == 0 {
			continue
		}
		call := fmt.Sprintf("%s %s%s", r.Resource, strings.Join(denied, ","), where(r))
		if r.Optional != "" {
			report.Optional = append(report.Optional, call+" ("+r.Optional+")")
			continue
		}
		report.Missing = append(report.Missing, call)
		fixes = append(fixes, fmt.Sprintf("{apiGroups: [%q], resources: [%q], verbs: [%s]}", r.Group, r.Resource, quoted(denied)))
	}
	if len(fixes) > 0 {
		report.Fix = fmt.Sprintf("add to the Role bound to wink-mcp's account in namespace %s the rules %s (docs/kubernetes.md, Permissions, has the whole Role)",
			e.opts.Namespace, strings.Join(fixes, ", "))
	}
	return report, nil
}

// where says where a rule's calls are made, for a message.
func where(r Rule) string {
	switch r.Namespace {
	case "":
		return ""
	case clusterScoped:
		return " (cluster-wide)"
	}
	return " in namespace " + r.Namespace
}

// quoted is verbs as a YAML flow sequence's items.
func quoted(verbs []string) string {
	q := make([]string, len(verbs))
	for i, v := range verbs {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, ", ")
}
