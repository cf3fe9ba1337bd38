package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/wink-mcp/wink-mcp/engine"
)

// TestRoamingHandoffIsTakenOnce: a handoff recorded on a roaming
// workspace's Lease (digests only) is refused to another principal and
// once expired, and of a crowd of takers on two servers racing for it
// exactly one gets it: its handle's record replaces the handoff's. A
// record edited to another principal than the Lease's is refused. While
// it waits, the Lease is kept (not idle) and its Pod awaits adoption.
// (A crowd on a real API server: integration.TestKubernetesRoamingHandle (roamingHandoffs).)
func TestRoamingHandoffIsTakenOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := versionedLeases(fake.NewClientset())
	a, b := twoReplicas(client)
	name := engine.NewRoamingName()
	held, err := a.HoldKept(ctx, engine.KeptAsk{Name: name, Holder: "A", Principal: "p1", Roaming: true, Idle: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	token := "secret-handoff-token"
	handoff := engine.HandoffRecord{Digest: engine.HandleDigest(token), Principal: "p1", Profile: "go", Expires: time.Now().Add(time.Hour)}
	if err := a.PutHandoff(ctx, name, handoff); err != nil {
		t.Fatal(err)
	}
	held.Release(ctx) // left for the taker: the Lease stays, with no holder
	lease := getLease(t, client, roamingObjectName(name))
	if lease.Spec.HolderIdentity != nil || strings.Contains(lease.Annotations[handoffAnnotation(handoff.Digest)], token) {
		t.Fatalf("the Lease after the handoff: holder %v, annotations %v; want none, and never the token", lease.Spec.HolderIdentity, lease.Annotations)
	}
	later := time.Now().Add(2 * time.Minute)
	if roamingIdle(lease, later) || !liveHandoff(lease, later) {
		t.Error("a Lease with a handoff waiting was judged idle past its idle timeout")
	}
	if awaits, err := b.AwaitsAdoption(ctx, name, true, time.Nanosecond); err != nil || !awaits {
		t.Errorf("the Pod of a workspace whose handoff waits: awaits adoption %v, %v; want true", awaits, err)
	}
	newHandle := func(i int) engine.HandleRecord {
		return engine.HandleRecord{Digest: engine.HandleDigest("wsh_" + string(rune('a'+i))), Principal: "p1", Used: time.Now().UTC()}
	}
	other := newHandle(0)
	other.Principal = "p2"
	if _, _, err := b.TakeHandoff(ctx, handoff.Digest, "p2", other); !errors.Is(err, engine.ErrNoHandleRecord) {
		t.Fatalf("another principal's take: %v; want ErrNoHandleRecord", err)
	}
	// The fake API server checks the Leases' resourceVersions here
	// (versionedLeases), as a real one does (integration.
	// TestKubernetesRoamingHandle's roamingHandoffs): of takers that read
	// the same version, one update wins.
	const takers = 8
	var wins atomic.Int32
	var won engine.HandleRecord
	var wg sync.WaitGroup
	for i := range takers {
		e := []*Engine{a, b}[i%2]
		wg.Go(func() {
			got, _, err := e.TakeHandoff(ctx, handoff.Digest, "p1", newHandle(i))
			switch {
			case err == nil:
				wins.Add(1)
				won = got
			case !errors.Is(err, engine.ErrNoHandleRecord):
				t.Errorf("taker %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d takers got the handoff; want exactly 1", wins.Load())
	}
	if won.Workspace != name || !won.Roaming || won.Profile != "go" {
		t.Errorf("the taken handle's record: %+v; want roaming workspace %s, profile go", won, name)
	}
	if taken := getLease(t, client, roamingObjectName(name)); !taken.Spec.RenewTime.After(lease.Spec.RenewTime.Time) {
		t.Errorf("the take did not start the Lease's idle time again: renewed %v, before %v", taken.Spec.RenewTime, lease.Spec.RenewTime)
	}
	if got, err := a.FindHandle(ctx, won.Digest); err != nil || got.Workspace != name {
		t.Errorf("the taker's handle is not found on the Lease: %+v, %v", got, err)
	}
	if _, _, err := a.TakeHandoff(ctx, handoff.Digest, "p1", newHandle(9)); !errors.Is(err, engine.ErrNoHandleRecord) {
		t.Errorf("a second use: %v; want ErrNoHandleRecord", err)
	}

	expired := engine.HandoffRecord{Digest: engine.HandleDigest("expired"), Principal: "p1", Expires: time.Now().Add(-time.Second)}
	edited := engine.HandoffRecord{Digest: engine.HandleDigest("edited"), Principal: "p2", Expires: time.Now().Add(time.Hour)}
	for _, rec := range []engine.HandoffRecord{expired, edited} {
		if err := a.PutHandoff(ctx, name, rec); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"p1", "p2"} {
			if _, _, err := b.TakeHandoff(ctx, rec.Digest, p, newHandle(10)); !errors.Is(err, engine.ErrNoHandleRecord) {
				t.Errorf("handoff %+v taken by %s: %v; want ErrNoHandleRecord", rec, p, err)
			}
		}
	}
	if leases, _ := client.CoordinationV1().Leases("wink").List(ctx, metav1.ListOptions{}); len(leases.Items) != 1 {
		t.Errorf("%d Leases; want the roaming workspace's one", len(leases.Items))
	}
}

// TestRoamingHandoffGivenBack: a handoff whose taker could not open the
// workspace is given back: the taker's record goes, the handoff's is
// back, and the handoff is taken again, once, by another handle; the
// Lease is never judged idle meanwhile. Giving back a record no longer
// there changes nothing. RoamingNames lists the roaming workspace.
func TestRoamingHandoffGivenBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := fake.NewClientset()
	a, b := twoReplicas(client)
	name := engine.NewRoamingName()
	held, err := a.HoldKept(ctx, engine.KeptAsk{Name: name, Holder: "A", Principal: "p1", Roaming: true, Idle: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	handoff := engine.HandoffRecord{Digest: engine.HandleDigest("handoff-token"), Principal: "p1", Profile: "go", Expires: time.Now().Add(time.Hour).UTC()}
	if err := a.PutHandoff(ctx, name, handoff); err != nil {
		t.Fatal(err)
	}
	held.Release(ctx)
	failed := engine.HandleRecord{Digest: engine.HandleDigest("wsh_failed"), Principal: "p1", Used: time.Now().UTC()}
	taken, given, err := b.TakeHandoff(ctx, handoff.Digest, "p1", failed)
	if err != nil || given != handoff {
		t.Fatalf("the take: %+v, %v; want the handoff's record %+v", given, err, handoff)
	}
	if err := b.GiveBackHandoff(ctx, taken, given); err != nil {
		t.Fatal(err)
	}
	lease := getLease(t, client, roamingObjectName(name))
	if _, ok := lease.Annotations[handleAnnotation(failed.Digest)]; ok || !liveHandoff(lease, time.Now()) || roamingIdle(lease, time.Now().Add(2*time.Minute)) {
		t.Fatalf("the Lease after the give-back: %v; want the handoff back, the failed taker's record gone, not idle", lease.Annotations)
	}
	if _, err := b.FindHandle(ctx, failed.Digest); !errors.Is(err, engine.ErrNoHandleRecord) {
		t.Errorf("the failed taker's handle after the give-back: %v; want ErrNoHandleRecord", err)
	}
	second := engine.HandleRecord{Digest: engine.HandleDigest("wsh_second"), Principal: "p1", Used: time.Now().UTC()}
	if got, _, err := a.TakeHandoff(ctx, handoff.Digest, "p1", second); err != nil || got.Workspace != name {
		t.Fatalf("the handoff taken again: %+v, %v", got, err)
	}
	if err := b.GiveBackHandoff(ctx, taken, given); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.TakeHandoff(ctx, handoff.Digest, "p1", failed); !errors.Is(err, engine.ErrNoHandleRecord) {
		t.Errorf("a stale give-back brought the handoff back: %v", err)
	}
	if names, err := b.RoamingNames(ctx); err != nil || len(names) != 1 || names[0] != name {
		t.Errorf("RoamingNames: %v, %v; want [%s]", names, err, name)
	}
}

// versionedLeases makes client's updates of Leases carry and check a
// resourceVersion, as a real API server's do (the fake's tracker keeps
// none): an update naming another version than the stored one fails
// with a conflict (one naming none is unconditional), and each update
// stores the next version. The fake
// runs a call's reactors under one lock, so the check and the write are
// one step.
func versionedLeases(client *fake.Clientset) *fake.Clientset {
	gvr := coordinationv1.SchemeGroupVersion.WithResource("leases")
	client.PrependReactor("update", "leases", func(action k8stesting.Action) (bool, runtime.Object, error) {
		update := action.(k8stesting.UpdateAction)
		lease, ok := update.GetObject().(*coordinationv1.Lease)
		if !ok {
			return false, nil, nil
		}
		stored, err := client.Tracker().Get(gvr, update.GetNamespace(), lease.Name)
		if err != nil {
			return false, nil, nil // the tracker says NotFound
		}
		current := stored.(*coordinationv1.Lease).ResourceVersion
		if lease.ResourceVersion != "" && lease.ResourceVersion != current { // "": an unconditional update
			return true, nil, apierrors.NewConflict(gvr.GroupResource(), lease.Name, fmt.Errorf("version %q, stored %q", lease.ResourceVersion, current))
		}
		n, _ := strconv.Atoi(current)
		lease.ResourceVersion = strconv.Itoa(n + 1)
		return false, nil, nil // the tracker stores it
	})
	return client
}
