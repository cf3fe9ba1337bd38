package server

import (
	"context"
	"sync"
)

// callTracker counts the tool calls in flight, so shutdown can wait for
// them. It is safe for concurrent use.
type callTracker struct {
	mu    sync.Mutex
	n     int
	empty chan struct{} // closed while n is 0
}

func newCallTracker() *callTracker {
	t := &callTracker{empty: make(chan struct{})}
	close(t.empty)
	return t
}

// start counts a call in; the returned function counts it out.
func (t *callTracker) start() func() {
	t.mu.Lock()
	if t.n == 0 {
		t.empty = make(chan struct{})
	}
	t.n++
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		if t.n--; t.n == 0 {
			close(t.empty)
		}
		t.mu.Unlock()
	}
}

// wait returns when no call is in flight, or ctx is done.
func (t *callTracker) wait(ctx context.Context) {
	t.mu.Lock()
	empty := t.empty
	t.mu.Unlock()
	select {
	case <-empty:
	case <-ctx.Done():
	}
}

func (t *callTracker) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}
