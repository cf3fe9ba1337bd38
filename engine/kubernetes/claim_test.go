package kubernetes

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/wink-mcp/wink-mcp/engine"
)

// claimOptions are testOptions with /workspace on a claim.
func claimOptions() Options {
	opts := testOptions
	opts.Claims, opts.StorageClass = true, "wink-local"
	return opts
}

// TestCreateOnAClaim follows a workspace on a claim through a fake API
// server, which binds nothing and mounts nothing: the claim as asked for,
// the Pod mounting it with its group, List finding the claim once the Pod
// is gone, RemoveWorkspace deleting it. The real node's test is
// integration.TestKubernetesClaim.
func TestCreateOnAClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := fake.NewClientset()
	e := newWithClient(claimOptions(), client, slog.New(slog.NewTextHandler(io.Discard, nil)))
	spec := testSpec()
	if err := e.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	claim, err := client.CoreV1().PersistentVolumeClaims("wink").Get(ctx, spec.WorkspaceVolume, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := claim.Spec.Resources.Requests[corev1.ResourceStorage]; got.Value() != spec.DiskBytes ||
		len(claim.Spec.AccessModes) != 1 || claim.Spec.AccessModes[0] != corev1.ReadWriteOnce || *claim.Spec.StorageClassName != "wink-local" {
		t.Errorf("claim %+v; want 2Gi, ReadWriteOnce, class wink-local", claim.Spec)
	}
	if claim.Labels["io.wink-mcp.managed"] != "true" || !strings.Contains(claim.Annotations[labelsAnnotation], "io.wink-mcp.lock") {
		t.Errorf("claim labels %v, annotations %v; want the Pod's", claim.Labels, claim.Annotations)
	}
	pod, err := client.CoreV1().Pods("wink").Get(ctx, spec.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v := pod.Spec.Volumes[2]; v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != spec.WorkspaceVolume || v.PersistentVolumeClaim.ReadOnly {
		t.Errorf("/workspace is %+v; want the claim, writable", v.VolumeSource)
	}
	if s := pod.Spec.SecurityContext; *s.FSGroup != 65534 || *s.FSGroupChangePolicy != corev1.FSGroupChangeOnRootMismatch {
		t.Errorf("fsGroup %v (%v); want 65534, OnRootMismatch", *s.FSGroup, *s.FSGroupChangePolicy)
	}
	// A second Create of the same workspace (its next Pod) keeps the claim.
	if err := e.Remove(ctx, spec.Name); err != nil {
		t.Fatal(err)
	}
	if err := e.Create(ctx, spec); err != nil {
		t.Fatalf("a Pod on an existing claim: %v", err)
	}
	listed, err := e.List(ctx, "io.wink-mcp.managed")
	if err != nil || len(listed) != 1 {
		t.Fatalf("List = %v, %v; want the Pod once (its claim has its name)", listed, err)
	}
	if err := e.Remove(ctx, spec.Name); err != nil {
		t.Fatal(err)
	}
	listed, err = e.List(ctx, "io.wink-mcp.managed")
	if err != nil || len(listed) != 1 || listed[0].Labels["io.wink-mcp.lock"] == "" {
		t.Fatalf("List = %v, %v; want the claim, with every label of its Spec", listed, err)
	}
	if err := e.RemoveWorkspace(ctx, spec.WorkspaceVolume); err != nil {
		t.Fatal(err)
	}
	if err := e.RemoveWorkspace(ctx, spec.WorkspaceVolume); err != nil {
		t.Errorf("removing a missing claim: %v", err)
	}
	if listed, err = e.List(ctx, "io.wink-mcp.managed"); err != nil || len(listed) != 0 {
		t.Errorf("List = %v, %v; want nothing", listed, err)
	}
}

// TestCreateRefusesClaimsItCannotUse: a claim of someone else's, and a
// claim without a size.
func TestCreateRefusesClaimsItCannotUse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	spec := testSpec()
	foreign := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: spec.WorkspaceVolume, Namespace: "wink"}}
	client := fake.NewClientset(foreign)
	e := newWithClient(claimOptions(), client, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := e.Create(ctx, spec); err == nil || !strings.Contains(err.Error(), "is not a wink-mcp workspace's (no label io.wink-mcp.managed=true)") {
		t.Errorf("Create on a foreign claim = %v", err)
	}
	spec.WorkspaceVolume, spec.DiskBytes = "wink-other", 0
	if err := e.Create(ctx, spec); err == nil || !strings.Contains(err.Error(), "set --disk-limit") {
		t.Errorf("Create without a disk limit = %v", err)
	}
	if pods, _ := client.CoreV1().Pods("wink").List(ctx, metav1.ListOptions{}); len(pods.Items) != 0 {
		t.Errorf("%d Pods made; want none", len(pods.Items))
	}
}

// TestCreateRefusesAWeakenedClaimVolume: admission that swaps the claim
// for another volume, or takes the Pod's group off it, is refused as any
// other weakening.
func TestCreateRefusesAWeakenedClaimVolume(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		field  string
		weaken func(*corev1.Pod)
	}{
		{"claim swapped", "spec.volumes", func(p *corev1.Pod) {
			p.Spec.Volumes[2].VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}
		}},
		{"claim read-only", "spec.volumes", func(p *corev1.Pod) { p.Spec.Volumes[2].PersistentVolumeClaim.ReadOnly = true }},
		{"another claim", "spec.volumes", func(p *corev1.Pod) { p.Spec.Volumes[2].PersistentVolumeClaim.ClaimName = "other" }},
		{"fsGroup root", "spec.securityContext", func(p *corev1.Pod) { p.Spec.SecurityContext.FSGroup = ptr.To[int64](0) }},
		{"fsGroup gone", "spec.securityContext", func(p *corev1.Pod) { p.Spec.SecurityContext.FSGroup = nil }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := fake.NewClientset()
			client.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
				tc.weaken(action.(k8stesting.CreateAction).GetObject().(*corev1.Pod))
				return false, nil, nil
			})
			e := newWithClient(claimOptions(), client, slog.New(slog.NewTextHandler(io.Discard, nil)))
			err := e.Create(context.Background(), testSpec())
			if !errors.Is(err, engine.ErrSettingsDrift) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("Create = %v; want ErrSettingsDrift naming %s", err, tc.field)
			}
		})
	}
}
