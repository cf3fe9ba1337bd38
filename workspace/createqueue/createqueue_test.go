package createqueue

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// waitFor polls cond until it holds, failing the test after a few seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// raise sets most to n if n is more.
func raise(most *atomic.Int32, n int32) {
	for {
		m := most.Load()
		if n <= m || most.CompareAndSwap(m, n) {
			return
		}
	}
}

// A crowd of creations never has more than the limit in flight, and every
// one of them runs.
func TestACrowdNeverExceedsTheLimit(t *testing.T) {
	q := New(3)
	var now, most, ran atomic.Int32
	var wg sync.WaitGroup
	for i := range 200 {
		class := ForClient
		if i%4 == 0 {
			class = ForPool
		}
		wg.Go(func() {
			done, err := q.Wait(context.Background(), class, nil)
			if err != nil {
				t.Error(err)
				return
			}
			raise(&most, now.Add(1))
			time.Sleep(100 * time.Microsecond)
			now.Add(-1)
			ran.Add(1)
			done()
			done() // a second call gives nothing back twice
		})
	}
	wg.Wait()
	if most.Load() > 3 {
		t.Errorf("%d creations ran at once, want at most 3", most.Load())
	}
	if ran.Load() != 200 {
		t.Errorf("%d of 200 creations ran", ran.Load())
	}
	if s := q.Stats(); s != (Stats{}) {
		t.Errorf("after the crowd the queue holds %+v, want nothing", s)
	}
}

// Waiters are let in in the order they came, clients' before the pool's,
// and each is told how many are ahead of it.
func TestWaitersGoInOrderClientsFirst(t *testing.T) {
	q := New(1)
	first, err := q.Wait(context.Background(), ForClient, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	aheadOf := map[string]int{}
	var wg sync.WaitGroup
	enqueue := func(name string, class Class) {
		wg.Go(func() {
			done, err := q.Wait(context.Background(), class, func(n int) {
				mu.Lock()
				if _, seen := aheadOf[name]; !seen {
					aheadOf[name] = n
				}
				mu.Unlock()
			})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			done()
		})
		waitFor(t, name+" to queue", func() bool {
			mu.Lock()
			defer mu.Unlock()
			_, seen := aheadOf[name]
			return seen
		})
	}
	enqueue("pool1", ForPool)
	enqueue("client1", ForClient)
	enqueue("client2", ForClient)
	enqueue("pool2", ForPool)
	enqueue("client3", ForClient)
	first()
	wg.Wait()
	want := []string{"client1", "client2", "client3", "pool1", "pool2"}
	if len(order) != len(want) {
		t.Fatalf("order %v, want %v", order, want)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("order %v, want %v", order, want)
		}
	}
	// As each came: 1 running, then those of its class before it, and for
	// the pool's every client's waiting then.
	wantAhead := map[string]int{"pool1": 1, "client1": 1, "client2": 2, "pool2": 4, "client3": 3}
	for name, n := range wantAhead {
		if aheadOf[name] != n {
			t.Errorf("%s was told %d ahead, want %d", name, aheadOf[name], n)
		}
	}
}

// A waiter whose context ends leaves the queue at once, holding nothing:
// the creations after it go on, and the queue ends empty.
func TestACancelledWaiterLeavesAtOnce(t *testing.T) {
	q := New(1)
	first, err := q.Wait(context.Background(), ForClient, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	left := make(chan error, 1)
	go func() {
		_, err := q.Wait(ctx, ForClient, nil)
		left <- err
	}()
	waitFor(t, "the waiter to queue", func() bool { return q.Stats().Waiting == 1 })
	later := make(chan func(), 1)
	go func() {
		done, err := q.Wait(context.Background(), ForClient, nil)
		if err != nil {
			t.Error(err)
		}
		later <- done
	}()
	waitFor(t, "the second waiter to queue", func() bool { return q.Stats().Waiting == 2 })
	cancel()
	select {
	case err := <-left:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("a cancelled waiter got %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a cancelled waiter did not leave the queue")
	}
	if s := q.Stats(); s.Waiting != 1 || s.Running != 1 {
		t.Fatalf("after the cancel the queue holds %+v, want 1 running and 1 waiting", s)
	}
	first()
	select {
	case done := <-later:
		done()
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter after a cancelled one was never let in (its slot leaked)")
	}
	if s := q.Stats(); s != (Stats{}) {
		t.Errorf("the queue holds %+v at the end, want nothing", s)
	}
}

// Waiters cancelled at random while others come and go never leak a slot
// nor let more than the limit in: the race detector watches the lot.
func TestCancellationsRacingReleasesLeakNothing(t *testing.T) {
	q := New(2)
	var now, most atomic.Int32
	var wg sync.WaitGroup
	for i := range 300 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%7)*100*time.Microsecond)
			defer cancel()
			done, err := q.Wait(ctx, Class(i%2), func(int) {})
			if err != nil {
				return
			}
			raise(&most, now.Add(1))
			time.Sleep(50 * time.Microsecond)
			now.Add(-1)
			done()
		})
	}
	wg.Wait()
	if most.Load() > 2 {
		t.Errorf("%d creations ran at once, want at most 2", most.Load())
	}
	if s := q.Stats(); s != (Stats{}) {
		t.Errorf("the queue holds %+v at the end, want nothing (a leaked slot)", s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done, err := q.Wait(ctx, ForPool, nil)
	if err != nil {
		t.Fatalf("a creation after the crowd: %v (a slot leaked)", err)
	}
	done()
}

// A waiter is told how many are ahead again while it waits.
func TestAWaiterIsToldAgainWhileItWaits(t *testing.T) {
	if testing.Short() && ReportEvery > 5*time.Second {
		t.Skip("reports are too far apart")
	}
	q := New(1)
	first, err := q.Wait(context.Background(), ForClient, nil)
	if err != nil {
		t.Fatal(err)
	}
	var reports atomic.Int32
	ctx, cancel := context.WithTimeout(context.Background(), ReportEvery+ReportEvery/2)
	defer cancel()
	_, err = q.Wait(ctx, ForClient, func(n int) {
		if n != 1 {
			t.Errorf("told %d ahead, want 1", n)
		}
		reports.Add(1)
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the deadline", err)
	}
	if reports.Load() != 2 {
		t.Errorf("%d reports in 1.5 report periods, want 2 (at once and one later)", reports.Load())
	}
	first()
}

// A context already ended gets its error without queueing.
func TestAnEndedContextDoesNotQueue(t *testing.T) {
	q := New(1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := q.Wait(ctx, ForClient, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if s := q.Stats(); s != (Stats{}) {
		t.Errorf("the queue holds %+v, want nothing", s)
	}
}
