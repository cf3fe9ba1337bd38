package quota

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestNilLedgerGrantsEverything(t *testing.T) {
	var l *Ledger = New(Limits{})
	if l != nil {
		t.Fatal("New with no limit should return nil")
	}
	h, err := l.Reserve("a", Amounts{Workspaces: 1000})
	if err != nil {
		t.Fatal(err)
	}
	h.Release() // a nil hold
	if got := l.InUse("a", Workspaces); got != 0 {
		t.Fatalf("in use %d", got)
	}
}

func TestReserveRefusesPastTheLimitAndNamesIt(t *testing.T) {
	l := New(Limits{Workspaces: 2})
	a1, err := l.Reserve("a", Amounts{Workspaces: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Reserve("a", Amounts{Workspaces: 1}); err != nil {
		t.Fatal(err)
	}
	_, err = l.Reserve("a", Amounts{Workspaces: 1})
	var ex *ExceededError
	if !errors.As(err, &ex) || ex.Limit != 2 || ex.InUse != 2 || ex.Asked != 1 || ex.Resource != Workspaces {
		t.Fatalf("want an ExceededError at 2 of 2, got %v", err)
	}
	for _, want := range []string{"workspaces quota", "--quota-workspaces", "limit of 2", "hold 2", "workspace_close"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	// Another principal is not touched by a's quota.
	if _, err := l.Reserve("b", Amounts{Workspaces: 2}); err != nil {
		t.Fatalf("b refused for a's use: %v", err)
	}
	// Releasing (twice) frees exactly one.
	a1.Release()
	a1.Release()
	if got := l.InUse("a", Workspaces); got != 1 {
		t.Fatalf("a holds %d after one release, want 1", got)
	}
	if _, err := l.Reserve("a", Amounts{Workspaces: 1}); err != nil {
		t.Fatalf("a refused after a release: %v", err)
	}
}

func TestReleaseForgetsAPrincipalWithNothingHeld(t *testing.T) {
	l := New(Limits{Workspaces: 1})
	h, _ := l.Reserve("a", Amounts{Workspaces: 1})
	h.Release()
	if len(l.used) != 0 {
		t.Fatalf("ledger still records %v", l.used)
	}
}

// TestConcurrentReservationsNeverPassTheLimit races many reservations of
// one principal (run with -race): exactly the limit succeed.
func TestConcurrentReservationsNeverPassTheLimit(t *testing.T) {
	const limit, tries = 3, 64
	l := New(Limits{Workspaces: limit})
	var granted atomic.Int64
	var holds sync.Map
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range tries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if h, err := l.Reserve("a", Amounts{Workspaces: 1}); err == nil {
				granted.Add(1)
				holds.Store(i, h)
			}
		}()
	}
	close(start)
	wg.Wait()
	if granted.Load() != limit {
		t.Fatalf("%d reservations granted, want exactly %d", granted.Load(), limit)
	}
	// Releases racing new reservations never drive the count past the limit or below 0.
	holds.Range(func(_, h any) bool {
		wg.Add(2)
		go func() { defer wg.Done(); h.(*Hold).Release() }()
		go func() {
			defer wg.Done()
			if h, err := l.Reserve("a", Amounts{Workspaces: 1}); err == nil {
				defer h.Release()
			}
			if n := l.InUse("a", Workspaces); n < 0 || n > limit {
				t.Errorf("in use %d, outside 0..%d", n, limit)
			}
		}()
		return true
	})
	wg.Wait()
	if n := l.InUse("a", Workspaces); n != 0 {
		t.Fatalf("in use %d after every release", n)
	}
}

// A reservation of several resources is all or nothing, and a refusal is
// told to the hook with the resource past its quota.
func TestReserveSeveralIsAllOrNothing(t *testing.T) {
	l := New(Limits{MemoryBytes: 2 << 30, MilliCPUs: 1500})
	var refused []Resource
	l.OnRefused(func(principal string, r Resource) { refused = append(refused, r) })
	if _, err := l.Reserve("a", Amounts{MemoryBytes: 1 << 30, MilliCPUs: 1000, Workspaces: 5}); err != nil {
		t.Fatal(err) // workspaces unlimited: not counted
	}
	_, err := l.Reserve("a", Amounts{MemoryBytes: 1 << 30, MilliCPUs: 1000})
	var ex *ExceededError
	if !errors.As(err, &ex) || ex.Resource != MilliCPUs || !strings.Contains(err.Error(), "--quota-cpus") || !strings.Contains(err.Error(), "limit of 1.5 CPUs") {
		t.Fatalf("want the CPU quota refused, got %v", err)
	}
	if got := l.InUse("a", MemoryBytes); got != 1<<30 {
		t.Errorf("a refused reservation took memory: %d held", got)
	}
	if len(refused) != 1 || refused[0] != MilliCPUs {
		t.Errorf("refusals told: %v", refused)
	}
	if _, err := l.Reserve("a", Amounts{MemoryBytes: 2 << 30}); err == nil || !strings.Contains(err.Error(), "1024 MiB") {
		t.Errorf("memory past its quota: %v", err)
	}
}

// The egress budget is one per principal, counts over a rolling day, and
// tells the hook of each refused connection.
func TestEgressBudgetRollsOverADay(t *testing.T) {
	l := New(Limits{EgressBytes: 1000})
	var refused []Resource
	l.OnRefused(func(_ string, r Resource) { refused = append(refused, r) })
	a := l.Egress("a")
	if a != l.Egress("a") || a == l.Egress("b") {
		t.Fatal("want one budget per principal")
	}
	now := time.Unix(1_000_000*3600, 0)
	a.now = func() time.Time { return now }
	a.Add(600)
	now = now.Add(5 * time.Hour)
	a.Add(400)
	if !a.Over() || l.Egress("b").Over() {
		t.Fatalf("a at 1000 of 1000: over %v; b over %v", a.Over(), l.Egress("b").Over())
	}
	reason, remedy := a.Refusal()
	if !strings.Contains(reason, "--quota-egress-bytes") || !strings.Contains(reason, "1000 bytes") || !strings.Contains(remedy, "rolling day") {
		t.Errorf("refusal %q / %q", reason, remedy)
	}
	if len(refused) != 1 || refused[0] != EgressBytes {
		t.Errorf("refusals told: %v", refused)
	}
	now = now.Add(20 * time.Hour) // the first 600 bytes are 25 hours old
	if a.Over() || a.Used() != 400 {
		t.Errorf("a day later: used %d, over %v; want 400, not over", a.Used(), a.Over())
	}
	now = now.Add(48 * time.Hour)
	if a.Used() != 0 {
		t.Errorf("days later: used %d", a.Used())
	}
	if New(Limits{Workspaces: 1}).Egress("a") != nil {
		t.Error("a budget without an egress quota")
	}
}
