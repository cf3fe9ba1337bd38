package integration

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

// documentedRBAC returns the objects of docs/kubernetes.md's Permissions
// section, moved from namespace wink to ns, and those outside it renamed
// with suffix, so that tests on a shared node do not meet.
func documentedRBAC(t *testing.T, ns, suffix string) []runtime.Object {
	t.Helper()
	page, err := os.ReadFile("../docs/kubernetes.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(page), "\n## Permissions\n")
	_, block, _ := strings.Cut(section, "```yaml\n")
	block, _, _ = strings.Cut(block, "```")
	var objs []runtime.Object
	for _, doc := range strings.Split(block, "\n---\n") {
		doc = strings.ReplaceAll(doc, "namespace: wink\n", "namespace: "+ns+"\n")
		doc = strings.ReplaceAll(doc, "namespace: wink}", "namespace: "+ns+"}")
		doc = strings.ReplaceAll(doc, "wink-mcp-wink", "wink-mcp-"+suffix)
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("the page's YAML: %v\n%s", err, doc)
		}
		objs = append(objs, obj)
	}
	return objs
}

// applyRBAC creates or updates the RBAC objects, and deletes those outside
// a namespace of their own at cleanup.
func applyRBAC(t *testing.T, cs *kubernetes.Clientset, objs []runtime.Object) {
	t.Helper()
	ctx := context.Background()
	rbac := cs.RbacV1()
	for _, obj := range objs {
		var err error
		switch o := obj.(type) {
		case *rbacv1.Role:
			// Not Update alone: the API server creates a missing Role on update.
			if _, err = rbac.Roles(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{}); err == nil {
				_, err = rbac.Roles(o.Namespace).Update(ctx, o, metav1.UpdateOptions{})
			} else {
				_, err = rbac.Roles(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
				t.Cleanup(func() { _ = rbac.Roles(o.Namespace).Delete(context.Background(), o.Name, metav1.DeleteOptions{}) })
			}
		case *rbacv1.RoleBinding:
			if _, err = rbac.RoleBindings(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{}); err != nil {
				_, err = rbac.RoleBindings(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
				t.Cleanup(func() {
					_ = rbac.RoleBindings(o.Namespace).Delete(context.Background(), o.Name, metav1.DeleteOptions{})
				})
			}
		case *rbacv1.ClusterRole:
			if _, err = rbac.ClusterRoles().Get(ctx, o.Name, metav1.GetOptions{}); err != nil {
				_, err = rbac.ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
				t.Cleanup(func() { _ = rbac.ClusterRoles().Delete(context.Background(), o.Name, metav1.DeleteOptions{}) })
			}
		case *rbacv1.ClusterRoleBinding:
			if _, err = rbac.ClusterRoleBindings().Get(ctx, o.Name, metav1.GetOptions{}); err != nil {
				_, err = rbac.ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
				t.Cleanup(func() { _ = rbac.ClusterRoleBindings().Delete(context.Background(), o.Name, metav1.DeleteOptions{}) })
			}
		}
		if err != nil {
			t.Fatalf("applying %T: %v", obj, err)
		}
	}
}

// serviceAccountKubeconfig writes a kubeconfig for the ServiceAccount
// wink-mcp of ns, with a token from the TokenRequest API.
func serviceAccountKubeconfig(t *testing.T, cs *kubernetes.Clientset, ns string) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "wink-mcp", Namespace: ns}}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "wink-mcp",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token: %v", err)
	}
	admin, err := clientcmd.LoadFromFile(clusterKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cluster := admin.Clusters[admin.Contexts[admin.CurrentContext].Cluster]
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = cluster
	cfg.AuthInfos["wink-mcp"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "wink-mcp", Namespace: ns}
	cfg.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// waitAllowed waits until the cluster's RBAC lets the ServiceAccount of
// ns make the call (or not): role changes reach the authoriser through
// its cache.
func waitAllowed(t *testing.T, cs *kubernetes.Clientset, ns string, attrs authorizationv1.ResourceAttributes, want bool) {
	t.Helper()
	waitUntil(t, 10*time.Second, "RBAC to take the Role", func() bool {
		review, err := cs.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: "system:serviceaccount:" + ns + ":wink-mcp", ResourceAttributes: &attrs}}, metav1.CreateOptions{})
		return err == nil && review.Status.Allowed == want
	})
}

// TestKubernetesPermissions gives a ServiceAccount in a namespace of its
// own exactly the Role of docs/kubernetes.md, less one verb: doctor names
// the missing verb and the rule to add; with the whole Role, doctor's
// permissions line is ok, its container check passes, and a session works
// with that account's kubeconfig, leaving no Pod or Lease.
func TestKubernetesPermissions(t *testing.T) {
	cs, _ := needCluster(t)
	ctx := context.Background()
	suffix := "wp" + randomHex(4)
	ns := suffix
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	kubeconfig := serviceAccountKubeconfig(t, cs, ns)
	objs := documentedRBAC(t, ns, suffix)
	role := objs[0].(*rbacv1.Role)
	leases := slices.IndexFunc(role.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "leases") })
	if leases < 0 {
		t.Fatalf("the page's Role has no rule for leases: %v", role.Rules)
	}
	full := role.Rules[leases].Verbs
	role.Rules[leases].Verbs = []string{"create", "get", "list", "delete"}
	applyRBAC(t, cs, objs)
	updateLeases := authorizationv1.ResourceAttributes{Namespace: ns, Verb: "update", Group: "coordination.k8s.io", Resource: "leases"}
	waitAllowed(t, cs, ns, authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "pods"}, true)

	args := []string{"--engine", "kubernetes", "--kubeconfig", kubeconfig, "--namespace", ns, "--kubernetes-agent-image", kubernetesAgentImage(t),
		"--image", pythonImage, "--name-prefix", "wp", "--allow-unenforced-network-policy"}
	out, code := doctor(t, args...)
	want := `FAIL  permissions   missing in namespace ` + ns + `: leases update`
	fix := `{apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["update"]}`
	if code == 0 || !strings.HasPrefix(line(out, "permissions"), want) || !strings.Contains(out, fix) {
		t.Errorf("doctor without leases update: exit %d; want %q and the rule %s:\n%s", code, want, fix, out)
	}

	role.Rules[leases].Verbs = full
	applyRBAC(t, cs, []runtime.Object{role})
	waitAllowed(t, cs, ns, updateLeases, true)
	out, code = doctor(t, args...)
	if code != 0 || !strings.HasPrefix(line(out, "permissions"), "ok    permissions   all 21 calls the engine makes are allowed") ||
		!strings.HasPrefix(line(out, "container"), "ok") {
		t.Fatalf("doctor with the page's Role: exit %d:\n%s", code, out)
	}

	p := start(t, startOptions{image: pythonImage, serviceFromEnv: true, args: append(args[:len(args):len(args)], "--disk-limit", "1g")})
	if res := p.run("id", "-u"); res.ExitCode != 0 || res.Stdout != "65534\n" {
		t.Fatalf("a session as the ServiceAccount: %+v", res)
	}
	p.endSession()
	p.waitExit(30 * time.Second)
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "io.wink-mcp.managed=true"})
	if err != nil || len(pods.Items) > 0 {
		t.Errorf("Pods left in %s: %v (%v)", ns, pods, err)
	}
	leaseList, err := cs.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(leaseList.Items) > 0 {
		t.Errorf("Leases left in %s: %v (%v)", ns, leaseList, err)
	}
}
