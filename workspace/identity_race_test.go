package workspace

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestAttachWhileCallsStart: calls that found a workspace before it was
// handed over (in this process, where it keeps its container) start on it
// while another session attaches it, which makes it that session's: the
// session id and hash they read (for change notices, logs) are never
// read while the attach writes them, and once it is attached its changes
// are told to the session that attached it. Run it with -race.
func TestAttachWhileCallsStart(t *testing.T) {
	m, _, _ := newTestManager(t, nil)
	var mu sync.Mutex
	told := map[string]int{}
	m.OnChange(func(_ context.Context, id string, _ []string) {
		mu.Lock()
		told[id]++
		mu.Unlock()
	})
	m.Register("giver", SessionOptions{Principal: "p"})
	m.Register("taker", SessionOptions{Principal: "p"})
	giver, _ := m.Session("giver")
	if _, err := giver.files.WriteFile(ctx, "f", "one"); err != nil {
		t.Fatal(err)
	}
	cp, err := giver.checkpoints.Checkpoint(ctx, "one")
	if err != nil {
		t.Fatal(err)
	}
	h, err := giver.handoffs.Handoff(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	taker, _ := m.Session("taker")

	const callers, rounds = 4, 6
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			<-start
			for r := range rounds {
				// Errors are expected once the workspace is another's in
				// the middle of a restore; only the reads matter here.
				path := fmt.Sprintf("w%d-%d", i, r)
				_, _ = giver.files.WriteFile(ctx, path, "x")
				_, _ = giver.Exec(ctx, ExecRequest{Argv: []string{"touch", path + ".sh"}, Timeout: 10 * time.Second})
				_, _ = giver.files.Remove(ctx, path)
				if r == 0 {
					_, _ = giver.checkpoints.Restore(ctx, cp.ID)
				}
			}
		})
	}
	wg.Go(func() {
		<-start
		time.Sleep(time.Millisecond) // the calls are under way
		if _, err := taker.handoffs.Attach(ctx, h.Handle); err != nil {
			t.Error(err)
		}
	})
	close(start)
	wg.Wait()

	attached, _ := m.Session("taker")
	mu.Lock()
	before := told["taker"]
	mu.Unlock()
	if _, err := attached.files.WriteFile(ctx, "after", "x"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if told["taker"] != before+1 {
		t.Errorf("a change after the attach was not told to the session that attached: %v", told)
	}
	for id := range told {
		if id != "giver" && id != "taker" {
			t.Errorf("a change was told to %q", id)
		}
	}
}
