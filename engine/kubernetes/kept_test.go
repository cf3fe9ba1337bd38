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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/wink-mcp/wink-mcp/engine"
)

func TestKeptObjectName(t *testing.T) {
	t.Parallel()
	a, b := keptObjectName("My_Work.1"), keptObjectName("my-work-1")
	if !strings.HasPrefix(a, "wink-kept-my-work-1-") || a == b {
		t.Errorf("names %q and %q; want readable, and apart", a, b)
	}
}

// TestHoldKept follows a kept workspace's claim and Lease through a fake
// API server: one holder at a time, the second refused naming the first,
// the workspace free again once released, its record listed, and removal
// refused while it is held. The real node's test is
// integration.TestKubernetesKeptWorkspace.
func TestHoldKept(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := fake.NewClientset()
	e := newWithClient(testOptions, client, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ask := engine.KeptAsk{Name: "proj", Holder: "server A", Principal: "p1", Image: "img:1", Profile: "default", DiskBytes: 1 << 30}
	held, err := e.HoldKept(ctx, ask)
	if err != nil {
		t.Fatal(err)
	}
	if held.Volume != keptObjectName("proj") {
		t.Errorf("volume %s", held.Volume)
	}
	claim, err := client.CoreV1().PersistentVolumeClaims("wink").Get(ctx, held.Volume, metav1.GetOptions{})
	if err != nil || claim.Labels[KeptLabel] != "true" || claim.Labels["io.wink-mcp.managed"] != "" || claim.Annotations[keptNameAnnotation] != "proj" {
		t.Fatalf("claim %+v, %v; want labelled kept, not managed (no sweep lists it), named proj", claim, err)
	}
	second := ask
	second.Holder = "server B"
	if _, err := e.HoldKept(ctx, second); !errors.Is(err, engine.ErrKeptHeld) || !strings.Contains(err.Error(), `workspace "proj" is held by server A`) {
		t.Errorf("a second holder: %v; want ErrKeptHeld naming server A", err)
	}
	other := ask
	other.Principal = "p2"
	if _, err := e.HoldKept(ctx, other); err == nil || !strings.Contains(err.Error(), "belongs to another client") {
		t.Errorf("another principal: %v", err)
	}
	if err := e.RemoveKept(ctx, "proj"); !errors.Is(err, engine.ErrKeptHeld) {
		t.Errorf("removing a held workspace: %v; want ErrKeptHeld", err)
	}
	list, err := e.ListKept(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "proj" || list[0].Holder != "server A" || list[0].Image != "img:1" || list[0].RequestedBytes != 1<<30 {
		t.Errorf("ListKept = %+v, %v", list, err)
	}
	held.Release(ctx)
	held.Release(ctx) // twice is fine
	if _, err := client.CoordinationV1().Leases("wink").Get(ctx, held.Volume, metav1.GetOptions{}); err == nil {
		t.Error("the Lease is still there after release")
	}
	heldB, err := e.HoldKept(ctx, second)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	heldB.Release(ctx)
	if err := e.RemoveKept(ctx, "proj"); err != nil {
		t.Fatal(err)
	}
	if list, _ := e.ListKept(ctx); len(list) != 0 {
		t.Errorf("after RemoveKept: %+v", list)
	}
	if err := e.RemoveKept(ctx, "proj"); err == nil || !strings.Contains(err.Error(), `no kept workspace "proj" in namespace wink`) {
		t.Errorf("removing it twice: %v", err)
	}
}

// TestHoldKeptTakesOverAnExpiredLease: a holder that stopped renewing
// loses the workspace once its term is over; while its term runs, an
// asker that cannot wait that long is refused.
func TestHoldKeptTakesOverAnExpiredLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := keptObjectName("proj")
	lease := func(renewed time.Duration) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "wink"}, Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To("dead server"), LeaseDurationSeconds: ptr.To[int32](15),
			RenewTime: ptr.To(metav1.NewMicroTime(time.Now().Add(-renewed)))}}
	}
	ask := engine.KeptAsk{Name: "proj", Holder: "server B", DiskBytes: 1 << 30}

	client := fake.NewClientset(lease(time.Minute))
	e := newWithClient(testOptions, client, slog.New(slog.NewTextHandler(io.Discard, nil)))
	held, err := e.HoldKept(ctx, ask)
	if err != nil {
		t.Fatalf("taking over an expired Lease: %v", err)
	}
	got, _ := client.CoordinationV1().Leases("wink").Get(ctx, name, metav1.GetOptions{})
	if *got.Spec.HolderIdentity != "server B" || *got.Spec.LeaseTransitions != 1 {
		t.Errorf("Lease %+v; want server B's, one transition", got.Spec)
	}
	held.Release(ctx)

	client = fake.NewClientset(lease(12 * time.Second))
	e = newWithClient(testOptions, client, slog.New(slog.NewTextHandler(io.Discard, nil)))
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, err := e.HoldKept(short, ask); !errors.Is(err, engine.ErrKeptHeld) || !strings.Contains(err.Error(), "held by dead server") {
		t.Errorf("a Lease with 3 s to go, asked with 1 s: %v; want ErrKeptHeld", err)
	}
}
