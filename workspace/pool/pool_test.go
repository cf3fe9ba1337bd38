package pool

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/testwait"
)

// entry is a fake pooled container: done closes when its channel ends.
type entry struct {
	name string
	done chan struct{}
}

// fakeOwner makes and ends entries, failing to make them while fail is set.
type fakeOwner struct {
	mu    sync.Mutex
	made  int
	fail  error
	ended []string
}

func (o *fakeOwner) deps() Deps[*entry] {
	return Deps[*entry]{
		Make: func(context.Context) (*entry, <-chan struct{}, error) {
			o.mu.Lock()
			defer o.mu.Unlock()
			o.made++
			e := &entry{name: "e" + strconv.Itoa(o.made), done: make(chan struct{})}
			if o.fail != nil {
				return e, nil, o.fail
			}
			return e, e.done, nil
		},
		End: func(_ context.Context, e *entry) {
			o.mu.Lock()
			defer o.mu.Unlock()
			o.ended = append(o.ended, e.name)
		},
		Name:       func(e *entry) string { return e.name },
		EndTimeout: time.Second,
		Log:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

func (o *fakeOwner) endedNames() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.ended)
}

func TestPoolFillsHandsOutAndRefills(t *testing.T) {
	o := &fakeOwner{}
	p := New(3, o.deps())
	defer p.Close(context.Background())
	testwait.For(t, "a full pool", func() bool { return len(p.Ready()) == 3 })
	first := p.Ready()[0]
	if got := p.Take(); got != first {
		t.Fatalf("Take = %v, want the oldest entry %v", got, first)
	}
	testwait.For(t, "the pool to refill", func() bool { return len(p.Ready()) == 3 })
	if slices.Contains(p.Ready(), first) {
		t.Fatal("an entry taken is still in the pool")
	}
}

func TestPoolNeverHandsOutADeadEntry(t *testing.T) {
	o := &fakeOwner{}
	p := New(1, o.deps())
	defer p.Close(context.Background())
	testwait.For(t, "a full pool", func() bool { return len(p.Ready()) == 1 })
	dead := p.Ready()[0]
	close(dead.done)
	if got := p.Take(); got != nil {
		t.Fatalf("Take handed out %v, whose channel ended", got.name)
	}
	testwait.For(t, "the dead entry ended", func() bool { return slices.Contains(o.endedNames(), dead.name) })
}

func TestPoolCloseEndsEveryEntry(t *testing.T) {
	o := &fakeOwner{}
	p := New(4, o.deps())
	testwait.For(t, "a full pool", func() bool { return len(p.Ready()) == 4 })
	ready := p.Ready()
	p.Close(context.Background())
	for _, e := range ready {
		if !slices.Contains(o.endedNames(), e.name) {
			t.Errorf("entry %s not ended by Close", e.name)
		}
	}
	if got := p.Take(); got != nil {
		t.Errorf("Take after Close = %v", got.name)
	}
}

func TestPoolThatCannotMakeEntriesBacksOffAndCloses(t *testing.T) {
	o := &fakeOwner{fail: errors.New("runtime exploded")}
	p := New(8, o.deps())
	testwait.For(t, "two rounds of failures", func() bool { return len(o.endedNames()) >= 2*Parallel })
	done := make(chan struct{})
	go func() {
		p.Close(context.Background())
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close hung on a pool whose entries all failed")
	}
	if got := len(p.Ready()); got != 0 {
		t.Errorf("%d entries ready after failures", got)
	}
}
