package kubernetes

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/wink-mcp/wink-mcp/engine"
)

// TestHandleRecordsOnTheKeptClaim follows a handle's record on its kept
// workspace's claim through a fake API server: an annotation holding the
// digest only, found from any replica, touched while there, gone after a
// delete (a touch then fails rather than bring it back), and gone with the
// workspace. The real node's test is integration.TestKubernetesHandlesAcrossReplicas.
func TestHandleRecordsOnTheKeptClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := fake.NewClientset()
	a, b := twoReplicas(client)
	held, err := a.HoldKept(ctx, engine.KeptAsk{Name: "proj", Holder: "A", Principal: "p1", DiskBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(ctx)
	handle := "wsh_secret-handle"
	rec := engine.HandleRecord{Digest: engine.HandleDigest(handle), Principal: "p1", Workspace: "proj", Profile: "go", Used: time.Unix(100, 0).UTC()}
	if err := a.PutHandle(ctx, rec); err != nil {
		t.Fatal(err)
	}
	claim, err := client.CoreV1().PersistentVolumeClaims("wink").Get(ctx, keptObjectName("proj"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	value, ok := claim.Annotations[handleAnnotation(rec.Digest)]
	if !ok || strings.Contains(value, "secret-handle") || len(strings.SplitN(handleAnnotation(rec.Digest), "/", 2)[1]) > 63 {
		t.Fatalf("annotations %v: want one per handle, a name of at most 63 characters, never the handle", claim.Annotations)
	}
	got, err := b.FindHandle(ctx, rec.Digest)
	if err != nil || got != rec {
		t.Fatalf("replica B finds %+v, %v; want %+v", got, err, rec)
	}
	if _, err := b.FindHandle(ctx, engine.HandleDigest("wsh_other")); !errors.Is(err, engine.ErrNoHandleRecord) {
		t.Errorf("another handle: %v; want ErrNoHandleRecord", err)
	}
	rec.Used = time.Unix(200, 0).UTC()
	if err := b.TouchHandle(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if got, _ := a.FindHandle(ctx, rec.Digest); !got.Used.Equal(rec.Used) {
		t.Errorf("after B's touch A reads used %v; want %v", got.Used, rec.Used)
	}
	if err := b.DeleteHandle(ctx, "proj", rec.Digest); err != nil {
		t.Fatal(err)
	}
	if err := a.TouchHandle(ctx, rec); !errors.Is(err, engine.ErrNoHandleRecord) {
		t.Errorf("A's touch after B's close: %v; want ErrNoHandleRecord", err)
	}
	if _, err := a.FindHandle(ctx, rec.Digest); !errors.Is(err, engine.ErrNoHandleRecord) {
		t.Errorf("a closed handle was found: %v", err)
	}
	if err := a.PutHandle(ctx, engine.HandleRecord{Digest: rec.Digest, Workspace: "gone", Used: rec.Used}); err == nil {
		t.Error("a record on a kept workspace without a claim was written")
	}
}

// TestHandleRecordOfAnotherClaimIsRefused: an annotation copied onto
// another kept workspace's claim, or not JSON, is not served.
func TestHandleRecordOfAnotherClaimIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := fake.NewClientset()
	e := newWithClient(testOptions, client, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, name := range []string{"proj", "other"} {
		held, err := e.HoldKept(ctx, engine.KeptAsk{Name: name, Holder: "A", Principal: "p1", DiskBytes: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		defer held.Release(ctx)
	}
	rec := engine.HandleRecord{Digest: engine.HandleDigest("wsh_a"), Principal: "p1", Workspace: "proj", Used: time.Unix(100, 0).UTC()}
	if err := e.PutHandle(ctx, rec); err != nil {
		t.Fatal(err)
	}
	claims := client.CoreV1().PersistentVolumeClaims("wink")
	proj, _ := claims.Get(ctx, keptObjectName("proj"), metav1.GetOptions{})
	value := proj.Annotations[handleAnnotation(rec.Digest)]
	if err := e.DeleteHandle(ctx, "proj", rec.Digest); err != nil {
		t.Fatal(err)
	}
	for _, forged := range []string{value, "{"} {
		other, _ := claims.Get(ctx, keptObjectName("other"), metav1.GetOptions{})
		other.Annotations[handleAnnotation(rec.Digest)] = forged
		if _, err := claims.Update(ctx, other, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.FindHandle(ctx, rec.Digest); err == nil || errors.Is(err, engine.ErrNoHandleRecord) || !strings.Contains(err.Error(), "remove the annotation") {
			t.Errorf("forged %q: %v; want refused, naming the annotation", forged, err)
		}
	}
}

// TestKeptWorkspaceIsHandedToTheServerThatWantsIt: a server that takes a
// kept workspace any server may serve (OnWanted) while another holds it
// asks that holder, which is told once and lets it go when it chooses;
// the asker then has it. A holder that never lets go keeps it: the asker
// is refused when its time is up, naming the holder.
func TestKeptWorkspaceIsHandedToTheServerThatWantsIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := fake.NewClientset()
	a, b := twoReplicas(client)
	wanted := make(chan struct{}, 4)
	ask := engine.KeptAsk{Name: "proj", Holder: "A", Principal: "p1", DiskBytes: 1 << 30, OnWanted: func() { wanted <- struct{}{} }}
	heldA, err := a.HoldKept(ctx, ask)
	if err != nil {
		t.Fatal(err)
	}
	askB := ask
	askB.Holder, askB.OnWanted = "B", func() {}
	short, cancel := context.WithTimeout(ctx, 3*wantedPoll)
	defer cancel()
	if _, err := b.HoldKept(short, askB); !errors.Is(err, engine.ErrKeptHeld) || !strings.Contains(err.Error(), "held by A, which did not let it go") {
		t.Fatalf("B while A keeps it: %v; want ErrKeptHeld naming A", err)
	}
	select {
	case <-wanted:
	case <-time.After(5 * wantedPoll):
		t.Fatal("A was never told B wants the workspace")
	}
	go func() {
		time.Sleep(wantedPoll) // A finishes a call first
		heldA.Release(ctx)
	}()
	start := time.Now()
	heldB, err := b.HoldKept(ctx, askB)
	if err != nil {
		t.Fatalf("B once A lets go: %v", err)
	}
	defer heldB.Release(ctx)
	if time.Since(start) < wantedPoll/2 {
		t.Error("B took the workspace before A let it go")
	}
	lease, err := client.CoordinationV1().Leases("wink").Get(ctx, keptObjectName("proj"), metav1.GetOptions{})
	if err != nil || *lease.Spec.HolderIdentity != "B" || lease.Annotations[wantedAnnotation] != "" {
		t.Errorf("Lease %+v, %v; want held by B, wanted by no one", lease, err)
	}
	if len(wanted) != 0 {
		t.Errorf("A was told %d more times", len(wanted))
	}
}
