package kubernetes

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
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
