package kubernetes

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// workspacePod is a Pod of the kept workspace ws in phase, made with
// labels as the engine makes them.
func workspacePod(name, ws string, phase corev1.PodPhase, owner string) *corev1.Pod {
	labels, annotation := podLabels(map[string]string{"io.wink-mcp.managed": "true", "io.wink-mcp.instance": owner,
		"io.wink-mcp.workspace": ws, "io.wink-mcp.lock": "/cache/" + owner + "/lock"})
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "wink", Labels: labels, ResourceVersion: "7",
		Annotations: map[string]string{labelsAnnotation: annotation}}, Status: corev1.PodStatus{Phase: phase}}
}

// TestAdoptChoosesTheRunningPodOfTheWorkspace: only a running Pod of the
// kept workspace asked for, not being deleted, is adopted; adopting it
// sets every label to the new owner's (those it lacks removed), and the
// annotation that keeps them all. The real node's test is
// integration.TestKubernetesHandleMovesKeepThePod.
func TestAdoptChoosesTheRunningPodOfTheWorkspace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	deleting := workspacePod("deleting", "proj", corev1.PodRunning, "a")
	deleting.DeletionTimestamp = &metav1.Time{}
	deleting.Finalizers = []string{"hold"}
	client := fake.NewClientset(
		workspacePod("other", "other-ws", corev1.PodRunning, "a"),
		workspacePod("pending", "proj", corev1.PodPending, "a"),
		deleting,
	)
	e := newWithClient(testOptions, client, slog.New(slog.NewTextHandler(io.Discard, nil)))
	mine := map[string]string{"io.wink-mcp.managed": "true", "io.wink-mcp.instance": "b", "io.wink-mcp.workspace": "proj"}
	if name, err := e.Adopt(ctx, "io.wink-mcp.workspace", "proj", mine); err != nil || name != "" {
		t.Fatalf("with no running Pod of the workspace: %q, %v; want none", name, err)
	}
	if _, err := client.CoreV1().Pods("wink").Create(ctx, workspacePod("running", "proj", corev1.PodRunning, "a"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	name, err := e.Adopt(ctx, "io.wink-mcp.workspace", "proj", mine)
	if err != nil || name != "running" {
		t.Fatalf("Adopt: %q, %v; want the running Pod", name, err)
	}
	got, err := client.CoreV1().Pods("wink").Get(ctx, "running", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	labels := objectLabels(got.ObjectMeta)
	if labels["io.wink-mcp.instance"] != "b" || labels["io.wink-mcp.lock"] != "" || got.Labels["io.wink-mcp.instance"] != "b" {
		t.Errorf("the adopted Pod's labels: %v (Pod labels %v); want the new owner's only", labels, got.Labels)
	}
	if _, ok := got.Labels["io.wink-mcp.lock"]; ok {
		t.Errorf("the old owner's lock label stayed: %v", got.Labels)
	}
}

// TestAdoptSaysWhatFailed: a Pod changed by another server meanwhile (a
// conflict) and a refused patch are errors naming the Pod; a Pod gone
// meanwhile is "none to adopt".
func TestAdoptSaysWhatFailed(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		want string
	}{
		{apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "running", errors.New("changed")), "another server changed it meanwhile"},
		{apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "running", errors.New("no patch")), "patching its labels"},
		{apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "running"), ""},
	} {
		client := fake.NewClientset(workspacePod("running", "proj", corev1.PodRunning, "a"))
		client.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, c.err })
		e := newWithClient(testOptions, client, slog.New(slog.NewTextHandler(io.Discard, nil)))
		name, err := e.Adopt(context.Background(), "io.wink-mcp.workspace", "proj", map[string]string{"io.wink-mcp.instance": "b"})
		switch {
		case c.want == "" && (err != nil || name != ""):
			t.Errorf("%v: %q, %v; want none to adopt", c.err, name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "Pod running")):
			t.Errorf("%v: %v; want an error naming Pod running and saying %q", c.err, err, c.want)
		}
	}
}

// TestAwaitsAdoptionDecides which dead server's Pod stays for the next
// holder of its kept workspace, from the workspace's Lease alone.
func TestAwaitsAdoptionDecides(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	lease := func(holder string, acquired, renewed time.Duration) *coordinationv1.Lease {
		l := &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To(int32(15))}}
		if holder != "" {
			l.Spec.HolderIdentity = ptr.To(holder)
		}
		l.Spec.AcquireTime = &metav1.MicroTime{Time: now.Add(-acquired)}
		l.Spec.RenewTime = &metav1.MicroTime{Time: now.Add(-renewed)}
		return l
	}
	idle := 15 * time.Minute
	for _, c := range []struct {
		name  string
		lease *coordinationv1.Lease
		want  bool
	}{
		{"a killed holder's Lease, expired a minute ago", lease("A", time.Hour, time.Minute), true},
		{"a killed holder's Lease, still live but not renewed for 12 s", lease("A", time.Hour, 12*time.Second), true},
		{"a killed holder's Lease, unused past the idle timeout", lease("A", time.Hour, 16*time.Minute), false},
		{"a new holder that took it 5 s ago (adopting)", lease("B", 5*time.Second, time.Second), true},
		{"a live holder settled for an hour (its own Pod)", lease("B", time.Hour, time.Second), false},
		{"no renew time", &coordinationv1.Lease{}, false},
	} {
		if got := awaitsAdoption(c.lease, now, idle); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
