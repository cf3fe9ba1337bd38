package egressrecord

import (
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/egress"
)

// record is a fake kept workspace's record: the counts written to it.
type record struct {
	mu     sync.Mutex
	writes []int64
}

func (r *record) write(used int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes = append(r.writes, used)
	return nil
}

func (r *record) last() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.writes) == 0 {
		return -1
	}
	return r.writes[len(r.writes)-1]
}

// waitFor waits until cond holds, failing the test after a long while.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRecorderWritesTheCountOfTheMeterItFollows(t *testing.T) {
	rec := &record{}
	first := egress.NewMeter(1<<20, 100)
	r := Start(t.TempDir(), first, rec.write, slog.New(slog.NewTextHandler(io.Discard, nil)))
	waitFor(t, "the starting count written", func() bool { return rec.last() == 100 })
	first.RaiseTo(5000)
	waitFor(t, "a raised count written", func() bool { return rec.last() == 5000 })

	second := egress.NewMeter(1<<20, 7000)
	r.Follow(second)
	waitFor(t, "the followed meter's count written", func() bool { return rec.last() == 7000 })
	first.RaiseTo(9000) // no longer followed
	second.RaiseTo(8000)
	waitFor(t, "the followed meter's raise written", func() bool { return rec.last() == 8000 })

	r.Close()
	r.Close() // safe twice
	r.Follow(egress.NewMeter(1<<20, 1))
	second.RaiseTo(10000)
	if got := rec.last(); got != 8000 {
		t.Fatalf("a closed recorder wrote %d", got)
	}
	for _, w := range rec.writes {
		if w == 9000 {
			t.Fatal("the recorder wrote the count of a meter it no longer follows")
		}
	}
}
