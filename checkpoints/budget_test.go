package checkpoints

import (
	"crypto/rand"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/wink-mcp/wink-mcp/quota"
)

// charged opens a store in a new directory charged to principal's
// checkpoint account in ledger.
func charged(t *testing.T, ledger *quota.Ledger, principal string) *Store {
	t.Helper()
	dir := t.TempDir()
	s, err := Open(dir, 0)
	must(t, err)
	s.ChargeTo(ledger.Checkpoints(principal, dir))
	return s
}

// checkpointOf commits a checkpoint of one file of random content of
// size bytes, aborting the build when a write is refused.
func checkpointOf(s *Store, size int) (Checkpoint, error) {
	data := make([]byte, size)
	_, _ = rand.Read(data)
	b := s.Build()
	sum, err := b.PutBlob(data)
	var root string
	if err == nil {
		root, err = b.PutTree([]Entry{{Name: "f", Kind: KindFile, Mode: 0o644, Size: int64(size), Hash: sum}})
	}
	if err == nil {
		err = b.Flush()
	}
	if err != nil {
		b.Abort()
		return Checkpoint{}, err
	}
	defer b.Done()
	return s.Commit(Checkpoint{Root: root})
}

// TestAStoreIsChargedToItsClientsQuota: two stores of one client share
// its quota, another client's does not; a checkpoint past it is refused
// with the quota's own error and leaves nothing written or counted;
// deleting a checkpoint gives its bytes back; a store opened again counts
// once; closing the account gives everything back.
func TestAStoreIsChargedToItsClientsQuota(t *testing.T) {
	const limit = 3 << 20
	ledger := quota.New(quota.Limits{CheckpointBytes: limit})
	var refused atomic.Int32
	ledger.OnRefused(func(p string, r quota.Resource) {
		if p == "a" && r == quota.CheckpointBytes {
			refused.Add(1)
		}
	})
	a1, a2, b := charged(t, ledger, "a"), charged(t, ledger, "a"), charged(t, ledger, "b")
	first, err := checkpointOf(a1, 2<<20)
	must(t, err)
	if got := ledger.InUse("a", quota.CheckpointBytes); got != a1.Bytes() || got < 2<<20 {
		t.Fatalf("a counts %d bytes, its store holds %d", got, a1.Bytes())
	}
	_, err = checkpointOf(a2, 2<<20)
	if !errors.Is(err, ErrOverBudget) || !errors.Is(err, ErrOverCap) {
		t.Fatalf("a's second store past the quota: %v, want ErrOverBudget", err)
	}
	for _, want := range []string{"checkpoints quota", "--quota-checkpoint-bytes", "limit of 3145728", "workspace_checkpoint_delete"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q lacks %q", err, want)
		}
	}
	if refused.Load() != 1 {
		t.Errorf("%d refusals told, want 1", refused.Load())
	}
	if a2.Bytes() != 0 || storeBytes(t, filepath.Join(a2.dir, objectsDir))+storeBytes(t, filepath.Join(a2.dir, packsDir))+storeBytes(t, filepath.Join(a2.dir, tmpDir)) != 0 {
		t.Errorf("the refused checkpoint left %d bytes counted in its store, or files", a2.Bytes())
	}
	if got := ledger.InUse("a", quota.CheckpointBytes); got != a1.Bytes() {
		t.Errorf("after the refusal a counts %d bytes, its stores hold %d", got, a1.Bytes())
	}
	if _, err := checkpointOf(b, 2<<20); err != nil {
		t.Errorf("b refused for a's use: %v", err)
	}
	if _, err := checkpointOf(a2, 512<<10); err != nil {
		t.Errorf("a's checkpoint that fits: %v", err)
	}
	if got := ledger.InUse("a", quota.CheckpointBytes); got != a1.Bytes()+a2.Bytes() {
		t.Errorf("a counts %d bytes, its stores hold %d", got, a1.Bytes()+a2.Bytes())
	}

	// Deleting gives back what collection frees; the room is a's again.
	if _, err := a1.Delete(first.ID); err != nil {
		t.Fatal(err)
	}
	if got := ledger.InUse("a", quota.CheckpointBytes); got != a1.Bytes()+a2.Bytes() || a1.Bytes() != 0 {
		t.Errorf("after the delete a counts %d bytes, its stores hold %d", got, a1.Bytes()+a2.Bytes())
	}
	if _, err := checkpointOf(a1, 2<<20); err != nil {
		t.Errorf("a's checkpoint after a delete freed room: %v", err)
	}

	// A store opened again (a kept workspace's next session) counts once.
	want := ledger.InUse("a", quota.CheckpointBytes)
	again, err := Open(a1.dir, 0)
	must(t, err)
	account := again.ChargeTo(ledger.Checkpoints("a", a1.dir))
	if got := ledger.InUse("a", quota.CheckpointBytes); got != want {
		t.Errorf("reopened, a counts %d bytes, want %d", got, want)
	}
	if n, err := Measure(a1.dir); err != nil || n != a1.Bytes() {
		t.Errorf("Measure = %d, %v; the store counts %d", n, err, a1.Bytes())
	}
	account.Close()
	account.Close()
	if got := ledger.InUse("a", quota.CheckpointBytes); got != a2.Bytes() {
		t.Errorf("after its store's account closed a counts %d bytes, want a2's %d", got, a2.Bytes())
	}
	if n, err := Measure(filepath.Join(t.TempDir(), "none")); err != nil || n != 0 {
		t.Errorf("Measure of no store = %d, %v", n, err)
	}
}

// TestACrowdOfCheckpointsAtTheQuota: eight workspaces of one client
// checkpoint at once, with room for four: exactly four are taken, the
// client's count is what its stores hold and never passes the quota, and
// the four refused leave nothing in their stores.
func TestACrowdOfCheckpointsAtTheQuota(t *testing.T) {
	const size = packMaxObject + 1 // one reservation a checkpoint: written as a loose blob
	const limit = 4*size + 32<<10  // room for four blobs and their trees
	ledger := quota.New(quota.Limits{CheckpointBytes: limit})
	var refused atomic.Int32
	ledger.OnRefused(func(string, quota.Resource) { refused.Add(1) })
	stores := make([]*Store, 8)
	for i := range stores {
		stores[i] = charged(t, ledger, "a")
	}
	var wg sync.WaitGroup
	var taken atomic.Int32
	for _, s := range stores {
		wg.Go(func() {
			_, err := checkpointOf(s, size)
			switch {
			case err == nil:
				taken.Add(1)
			case !errors.Is(err, ErrOverBudget):
				t.Errorf("a checkpoint of the crowd: %v", err)
			}
		})
	}
	wg.Wait()
	var held int64
	empty := 0
	for _, s := range stores {
		held += s.Bytes()
		if s.Bytes() == 0 && storeBytes(t, filepath.Join(s.dir, objectsDir))+storeBytes(t, filepath.Join(s.dir, tmpDir)) == 0 {
			empty++
		}
	}
	if taken.Load() != 4 || refused.Load() != 4 || empty != 4 {
		t.Errorf("%d checkpoints taken, %d refused, %d stores left empty; want 4, 4, 4", taken.Load(), refused.Load(), empty)
	}
	if got := ledger.InUse("a", quota.CheckpointBytes); got != held || got > limit {
		t.Errorf("a counts %d bytes, its stores hold %d, the quota is %d", got, held, limit)
	}
}
