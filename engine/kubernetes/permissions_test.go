package kubernetes

import (
	"context"
	"io"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"
)

// TestCheckPermissions asks a fake API server that denies leases update
// and nodes list: the first is missing, with the rule to add, the second
// optional; every verb of Rules is asked about.
func TestCheckPermissions(t *testing.T) {
	t.Parallel()
	client := fake.NewClientset()
	client.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		review := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		attrs := review.Spec.ResourceAttributes
		denied := (attrs.Resource == "leases" && attrs.Verb == "update") || (attrs.Resource == "nodes" && attrs.Namespace == "")
		review.Status.Allowed = !denied
		return true, review, nil
	})
	e := newWithClient(leaseOptions, client, slog.New(slog.NewTextHandler(io.Discard, nil)))
	r, err := e.CheckPermissions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	verbs := 0
	for _, rule := range Rules {
		verbs += len(rule.Verbs)
	}
	want := `add to the Role bound to wink-mcp's account in namespace wink the rules {apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["update"]}`
	if r.Checked != verbs || len(r.Missing) != 1 || r.Missing[0] != "leases update" || !strings.HasPrefix(r.Fix, want) ||
		len(r.Optional) != 1 || !strings.HasPrefix(r.Optional[0], "nodes list (cluster-wide)") {
		t.Errorf("CheckPermissions = %+v", r)
	}
}

// TestDocumentedRole checks that the Role, and the optional Role and
// ClusterRole, of docs/kubernetes.md grant exactly Rules, and the
// manifests of deploy/kubernetes exactly Rules but the EndpointSlice in
// "default" (a base tied to no namespace cannot grant it; the probe then
// dials a node): what operators and deploy manifests copy is the engine's
// own table.
func TestDocumentedRole(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile("../../docs/kubernetes.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(page), "\n## Permissions\n")
	_, block, _ := strings.Cut(section, "```yaml\n")
	block, _, _ = strings.Cut(block, "```")
	want := map[string][]string{}
	for _, r := range Rules {
		want[r.Namespace+" "+r.Group+" "+r.Resource] = slices.Sorted(slices.Values(r.Verbs))
	}
	if got := granted(t, block); !reflect.DeepEqual(got, want) {
		t.Errorf("docs/kubernetes.md grants %v; the engine calls %v", got, want)
	}
	var manifests []string
	for _, f := range []string{"role.yaml", "clusterrole.yaml"} {
		b, err := os.ReadFile("../../deploy/kubernetes/" + f)
		if err != nil {
			t.Fatal(err)
		}
		manifests = append(manifests, string(b))
	}
	delete(want, "default discovery.k8s.io endpointslices")
	if got := granted(t, strings.Join(manifests, "\n---\n")); !reflect.DeepEqual(got, want) {
		t.Errorf("deploy/kubernetes grants %v; the engine calls %v", got, want)
	}
}

// granted returns the verbs the Roles and ClusterRoles of a YAML stream
// grant, by "namespace group resource": namespace "" for a Role of
// namespace wink or of none (a kustomize base), clusterScoped for a
// ClusterRole's.
func granted(t *testing.T, stream string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, doc := range strings.Split(stream, "\n---\n") {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("decoding: %v\n%s", err, doc)
		}
		var rules []rbacv1.PolicyRule
		namespace := clusterScoped
		switch o := obj.(type) {
		case *rbacv1.Role:
			rules, namespace = o.Rules, o.Namespace
			if namespace == "wink" {
				namespace = ""
			}
		case *rbacv1.ClusterRole:
			rules = o.Rules
		}
		for _, r := range rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					key := namespace + " " + g + " " + res
					out[key] = slices.Sorted(slices.Values(append(out[key], r.Verbs...)))
				}
			}
		}
	}
	return out
}
