package quota

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func TestStoreAccountsShareTheirClientsQuota(t *testing.T) {
	if New(Limits{Workspaces: 1}).Checkpoints("a", "s") != nil {
		t.Fatal("an account with no checkpoint quota")
	}
	var nilAccount *StoreAccount
	if err := nilAccount.Take(1 << 40); err != nil {
		t.Fatal(err)
	}
	nilAccount.Give(1)
	nilAccount.Set(1)
	nilAccount.Close()

	l := New(Limits{CheckpointBytes: 100})
	told := 0
	l.OnRefused(func(p string, r Resource) {
		if p == "a" && r == CheckpointBytes {
			told++
		}
	})
	s1, s2 := l.Checkpoints("a", "/one"), l.Checkpoints("a", "/two")
	if l.Checkpoints("a", "/one") != s1 {
		t.Fatal("the same store got two accounts")
	}
	if err := s1.Take(60); err != nil {
		t.Fatal(err)
	}
	err := s2.Take(41)
	var ex *ExceededError
	if !errors.As(err, &ex) || ex.Resource != CheckpointBytes || ex.InUse != 60 || ex.Asked != 41 || ex.Limit != 100 || told != 1 {
		t.Fatalf("past the quota: %v (told %d)", err, told)
	}
	for _, want := range []string{"checkpoints quota", "you hold 60 bytes", "limit of 100 bytes", "--quota-checkpoint-bytes", "workspace_checkpoint_delete"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	if err := s2.Take(40); err != nil || l.InUse("a", CheckpointBytes) != 100 {
		t.Errorf("a take that fits the quota exactly: %v", err)
	}
	s2.Give(40)
	if err := l.Checkpoints("b", "/one").Take(100); err != nil {
		t.Errorf("b refused for a's use: %v", err)
	}
	// Set replaces the store's count: a store opened again counts once.
	s1.Set(30)
	s1.Set(30)
	if got := l.InUse("a", CheckpointBytes); got != 30 {
		t.Errorf("after Set(30) twice a holds %d", got)
	}
	s2.Give(-80) // written beyond its reservation: counted, unchecked
	if got := l.InUse("a", CheckpointBytes); got != 110 {
		t.Errorf("a holds %d, want 110", got)
	}
	s2.Give(80)
	s1.Close()
	s1.Close()
	s1.Give(-1000) // a closed account counts nothing
	if got := l.InUse("a", CheckpointBytes); got != 0 {
		t.Errorf("after closing a holds %d", got)
	}
	if l.Checkpoints("a", "/one") == s1 {
		t.Error("a closed account was found again")
	}
}

// TestStoreAccountsRacingAtTheQuota: 64 takes of 10 bytes, from 8 stores
// of one client, at a quota of 250: exactly 25 are taken.
func TestStoreAccountsRacingAtTheQuota(t *testing.T) {
	l := New(Limits{CheckpointBytes: 250})
	var taken atomic.Int32
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			if l.Checkpoints("a", string(rune('a'+i%8))).Take(10) == nil {
				taken.Add(1)
			}
		})
	}
	wg.Wait()
	if taken.Load() != 25 || l.InUse("a", CheckpointBytes) != 250 {
		t.Errorf("%d takes granted, %d held; want 25 and 250", taken.Load(), l.InUse("a", CheckpointBytes))
	}
}

// BenchmarkStoreAccount is the accounting a checkpoint store does per
// object it writes under the quota: one Take and one Give.
func BenchmarkStoreAccount(b *testing.B) {
	a := New(Limits{CheckpointBytes: 1 << 50}).Checkpoints("a", "/store")
	for b.Loop() {
		if err := a.Take(4096); err != nil {
			b.Fatal(err)
		}
		a.Give(4096)
	}
}
