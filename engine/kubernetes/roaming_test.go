package kubernetes

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/wink-mcp/wink-mcp/engine"
)

// TestRoamingWorkspaceMovesWithItsRecord follows a roaming workspace
// through a fake API server: A opens it (a Lease, no claim) and records a
// handle on the Lease (digests only); B finds the record and, asking for
// the workspace, gets it once A lets go, with the record still on the
// Lease; another principal is refused it; closed (record removed), its
// last holder deletes the Lease.
func TestRoamingWorkspaceMovesWithItsRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := fake.NewClientset()
	a, b := twoReplicas(client)
	name := engine.NewRoamingName()
	wanted := make(chan struct{}, 4)
	ask := engine.KeptAsk{Name: name, Holder: "A", Principal: "p1", Roaming: true, Idle: time.Hour, OnWanted: func() { wanted <- struct{}{} }}
	heldA, err := a.HoldKept(ctx, ask)
	if err != nil {
		t.Fatal(err)
	}
	if claims, _ := client.CoreV1().PersistentVolumeClaims("wink").List(ctx, metav1.ListOptions{}); len(claims.Items) != 0 {
		t.Errorf("a roaming workspace made claims: %v", claims.Items)
	}
	handle := "wsh_secret-handle"
	rec := engine.HandleRecord{Digest: engine.HandleDigest(handle), Principal: "p1", Workspace: name, Roaming: true, Used: time.Unix(100, 0).UTC()}
	if err := a.PutHandle(ctx, rec); err != nil {
		t.Fatal(err)
	}
	lease := getLease(t, client, roamingObjectName(name))
	if value := lease.Annotations[handleAnnotation(rec.Digest)]; value == "" || strings.Contains(value, "secret-handle") {
		t.Fatalf("annotations %v: want the record, never the handle", lease.Annotations)
	}
	if got, err := b.FindHandle(ctx, rec.Digest); err != nil || got != rec {
		t.Fatalf("B finds %+v, %v; want %+v", got, err, rec)
	}
	other := ask
	other.Holder, other.Principal = "C", "p2"
	if _, err := b.HoldKept(ctx, other); err == nil || !strings.Contains(err.Error(), "belongs to another client") {
		t.Fatalf("another principal's hold: %v; want refused", err)
	}
	askB := ask
	askB.Holder, askB.OnWanted = "B", func() {}
	go func() {
		<-wanted
		heldA.Release(ctx)
	}()
	heldB, err := b.HoldKept(ctx, askB)
	if err != nil {
		t.Fatalf("B once A lets go: %v", err)
	}
	lease = getLease(t, client, roamingObjectName(name))
	if ptr.Deref(lease.Spec.HolderIdentity, "") != "B" || lease.Annotations[handleAnnotation(rec.Digest)] == "" {
		t.Fatalf("after the move: holder %q, annotations %v; want B, with the record", ptr.Deref(lease.Spec.HolderIdentity, ""), lease.Annotations)
	}
	rec.Used = time.Unix(200, 0).UTC()
	if err := b.TouchHandle(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteHandle(ctx, name, rec.Digest); err != nil {
		t.Fatal(err)
	}
	if err := b.TouchHandle(ctx, rec); !errors.Is(err, engine.ErrNoHandleRecord) {
		t.Errorf("B's touch after A's close: %v; want ErrNoHandleRecord", err)
	}
	heldB.Release(ctx)
	if leases, _ := client.CoordinationV1().Leases("wink").List(ctx, metav1.ListOptions{}); len(leases.Items) != 0 {
		t.Errorf("a closed roaming workspace left Leases: %v", leases.Items)
	}
}

// TestRoamingRecordEditedIsRefused: a roaming record is served only from
// its own workspace's Lease and for that Lease's principal; one copied
// to another principal's Lease, edited to name another workspace or
// principal, or not marked roaming, is refused.
func TestRoamingRecordEditedIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := fake.NewClientset()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	e := newWithClient(testOptions, client, log)
	mine, theirs := engine.NewRoamingName(), engine.NewRoamingName()
	for name, principal := range map[string]string{mine: "p1", theirs: "p2"} {
		held, err := e.HoldKept(ctx, engine.KeptAsk{Name: name, Holder: "A", Principal: principal, Roaming: true, Idle: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		defer held.Release(ctx)
	}
	rec := engine.HandleRecord{Digest: engine.HandleDigest("wsh_mine"), Principal: "p1", Workspace: mine, Roaming: true, Used: time.Unix(100, 0).UTC()}
	for what, edit := range map[string]func(r *engine.HandleRecord) string{
		"copied to another principal's Lease":  func(r *engine.HandleRecord) string { return theirs },
		"naming another principal's workspace": func(r *engine.HandleRecord) string { r.Workspace = theirs; return theirs },
		"with another principal":               func(r *engine.HandleRecord) string { r.Principal = "p2"; return mine },
		"not roaming":                          func(r *engine.HandleRecord) string { r.Roaming = false; return mine },
	} {
		bad := rec
		on := edit(&bad)
		if err := e.patchHandle(ctx, on, true, rec.Digest, &bad, false); err != nil {
			t.Fatal(err)
		}
		if got, err := e.FindHandle(ctx, rec.Digest); err == nil {
			t.Errorf("a record %s was served: %+v", what, got)
		}
		if err := e.patchHandle(ctx, on, true, rec.Digest, nil, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.PutHandle(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if got, err := e.FindHandle(ctx, rec.Digest); err != nil || got != rec {
		t.Errorf("the record as written: %+v, %v", got, err)
	}
}

// TestIdleRoamingLeasesGoOnce: two servers sweeping at once delete a
// roaming workspace's Lease nobody renewed for its idle timeout exactly
// once, and one that no handle names whose handoff expired, and leave a
// held one and one whose idle time has not passed.
func TestIdleRoamingLeasesGoOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Now()
	roaming := func(name, holder string, renewed time.Duration) *coordinationv1.Lease {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: roamingObjectName(name), Namespace: "wink", Labels: map[string]string{RoamingLabel: "true"},
			Annotations: map[string]string{roamingIdleAnnotation: "10m0s", roamingPrincipalAnnotation: "p1", handleAnnotation(engine.HandleDigest(name)): "{}"}},
			Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To(int32(15)), RenewTime: ptr.To(metav1.NewMicroTime(now.Add(-renewed)))}}
		if holder != "" {
			l.Spec.HolderIdentity = ptr.To(holder)
		}
		return l
	}
	idle, held, recent, killed := engine.NewRoamingName(), engine.NewRoamingName(), engine.NewRoamingName(), engine.NewRoamingName()
	abandoned := roaming(engine.NewRoamingName(), "", time.Minute)
	abandoned.Annotations = map[string]string{roamingIdleAnnotation: "10m0s", handoffAnnotation(engine.HandleDigest("h")): `{"expires":"2026-01-01T00:00:00Z"}`}
	client := fake.NewClientset(roaming(idle, "", 11*time.Minute), roaming(held, "B", time.Second), roaming(recent, "", 9*time.Minute),
		roaming(killed, "A", 11*time.Minute), abandoned)
	var removals lockedBuffer
	log := slog.New(slog.NewTextHandler(&removals, nil))
	a, b := newUnprobed(testOptions, client, log), newUnprobed(testOptions, client, log)
	var wg sync.WaitGroup
	for _, e := range []*Engine{a, b} {
		wg.Go(func() {
			if err := forgetIdleRoaming(ctx, e, client, time.Now()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	leases, _ := client.CoordinationV1().Leases("wink").List(ctx, metav1.ListOptions{})
	var left []string
	for _, l := range leases.Items {
		left = append(left, l.Name)
	}
	if len(left) != 2 || !strings.Contains(strings.Join(left, " "), held) || !strings.Contains(strings.Join(left, " "), recent) {
		t.Errorf("left %v; want the held and the recent one", left)
	}
	if got := strings.Count(removals.String(), "removed the Lease of a roaming workspace"); got != 3 {
		t.Errorf("%d removals logged; want 3 (the idle one, the killed holder's, the abandoned handoff's, once each):\n%s", got, removals.String())
	}
}

// lockedBuffer is a log's output shared by goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func getLease(t *testing.T, client *fake.Clientset, name string) *coordinationv1.Lease {
	t.Helper()
	l, err := client.CoordinationV1().Leases("wink").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}
