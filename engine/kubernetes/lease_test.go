package kubernetes

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/wink-mcp/wink-mcp/engine"
)

var leaseOptions = func() Options { o := testOptions; o.InstanceLabel = "io.wink-mcp.instance"; return o }()

// TestHoldInstance holds an instance's Lease through a fake API server:
// made labelled with its duration, the probe Pods labelled with the
// instance from then on, alive while held, gone once released.
func TestHoldInstance(t *testing.T) {
	t.Parallel()
	client := fake.NewClientset()
	e := newWithClient(leaseOptions, client, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx := context.Background()
	const id = "0123456789abcdef"
	h, err := e.HoldInstance(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	l, err := client.CoordinationV1().Leases("wink").Get(ctx, "wink-mcp-instance-"+id, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *l.Spec.LeaseDurationSeconds != 15 || l.Labels[leaseLabel] != "true" || l.Labels["io.wink-mcp.instance"] != id || l.Spec.RenewTime == nil {
		t.Errorf("the Lease = %+v; want labelled, 15 s, renewed", l)
	}
	if err := h.Held(); err != nil {
		t.Errorf("Held = %v just after holding", err)
	}
	if p := probePod("p", "10.0.0.1:1", e.instance, e.opts); p.Labels["io.wink-mcp.instance"] != id {
		t.Errorf("a probe Pod made while holding is labelled %v; want the instance", p.Labels)
	}
	if alive, err := e.InstanceAlive(ctx, id); err != nil || !alive {
		t.Errorf("InstanceAlive = %v, %v; want alive", alive, err)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if alive, err := e.InstanceAlive(ctx, id); err != nil || alive {
		t.Errorf("InstanceAlive after Release = %v, %v; want dead", alive, err)
	}
}

// TestLeaseRenewal renews a Lease deleted by another server's sweep (made
// again), and one the API server refuses to renew: Held stays nil within
// the duration and fails with ErrNotHeld after it.
func TestLeaseRenewal(t *testing.T) {
	t.Parallel()
	client := fake.NewClientset()
	e := newWithClient(leaseOptions, client, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx := context.Background()
	held, err := e.HoldInstance(ctx, "0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	h := held.(*leaseHold)
	h.stop()
	<-h.done
	leases := client.CoordinationV1().Leases("wink")
	if err := leases.Delete(ctx, leaseName(h.instance), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.renew(ctx)
	if _, err := leases.Get(ctx, leaseName(h.instance), metav1.GetOptions{}); err != nil {
		t.Errorf("a Lease deleted by a sweep is not made again: %v", err)
	}
	client.PrependReactor("*", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcdserver: request timed out")
	})
	h.mu.Lock()
	h.renewed = time.Now().Add(-LeaseDuration + time.Second)
	h.mu.Unlock()
	h.renew(ctx)
	if err := h.Held(); err != nil {
		t.Errorf("Held = %v within the duration", err)
	}
	h.mu.Lock()
	h.renewed = time.Now().Add(-LeaseDuration - time.Second)
	h.mu.Unlock()
	h.renew(ctx)
	if err := h.Held(); !errors.Is(err, engine.ErrNotHeld) {
		t.Errorf("Held = %v after a duration of failed renewals; want ErrNotHeld", err)
	}
}

// TestLeaseClock judges Leases by this machine's clock: one whose version
// stays for a duration is expired whatever its renewTime says, one first
// seen is judged by its renewTime with maxClockSkew to spare.
func TestLeaseClock(t *testing.T) {
	t.Parallel()
	// Each step is 8 s after the last: a Lease's version then, and how
	// long before then its holder's clock says it was renewed.
	type step struct {
		version    string
		renewedAgo time.Duration
		expired    bool
	}
	for _, tt := range []struct {
		name  string
		steps []step
	}{
		{"renewed", []step{{"1", 0, false}, {"2", 0, false}, {"3", 0, false}}},
		{"stopped renewing", []step{{"1", 0, false}, {"1", 8 * time.Second, false}, {"1", 16 * time.Second, true}}},
		{"a holder's clock ahead, stopped", []step{{"1", -time.Minute, false}, {"1", -52 * time.Second, false}, {"1", -44 * time.Second, true}}},
		{"a holder's clock behind, renewing", []step{{"1", 20 * time.Second, false}, {"2", 20 * time.Second, false}, {"3", 20 * time.Second, false}}},
		{"long dead", []step{{"1", time.Minute, true}, {"1", time.Minute + 8*time.Second, true}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var lc leaseClock
			now := time.Now()
			for i, s := range tt.steps {
				at := now.Add(time.Duration(i) * 8 * time.Second)
				l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l", ResourceVersion: s.version},
					Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](15), RenewTime: ptr.To(metav1.NewMicroTime(at.Add(-s.renewedAgo)))}}
				if got := lc.expired(l, at); got != s.expired {
					t.Errorf("step %d: expired = %v; want %v", i, got, s.expired)
				}
			}
		})
	}
}

// TestForgetDeadInstances deletes the expired Leases and those of
// instances known dead, and only those.
func TestForgetDeadInstances(t *testing.T) {
	t.Parallel()
	now := time.Now()
	fresh := leaseFor("1111111111111111", leaseOptions, now)
	stale := leaseFor("2222222222222222", leaseOptions, now.Add(-time.Minute))
	other := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kube-scheduler", Namespace: "wink"}}
	client := fake.NewClientset(fresh, stale, other)
	e := newWithClient(leaseOptions, client, slog.New(slog.NewTextHandler(io.Discard, nil)))
	known := leaseFor("3333333333333333", leaseOptions, now)
	if _, err := client.CoordinationV1().Leases("wink").Create(context.Background(), known, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dead, err := e.ForgetDeadInstances(context.Background(), []string{"3333333333333333"})
	if err != nil || !slices.Equal(dead, []string{"2222222222222222", "3333333333333333"}) {
		t.Fatalf("ForgetDeadInstances = %v, %v; want the stale instance and the known dead one", dead, err)
	}
	list, _ := client.CoordinationV1().Leases("wink").List(context.Background(), metav1.ListOptions{})
	if len(list.Items) != 2 {
		t.Errorf("Leases left: %d; want the fresh one and the one not wink-mcp's", len(list.Items))
	}
}
