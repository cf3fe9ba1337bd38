package egressrecord

import (
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/wink-mcp/wink-mcp/egress"
	"github.com/wink-mcp/wink-mcp/internal/testwait"
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

func TestRecorderWritesTheCountOfTheMeterItFollows(t *testing.T) {
	rec := &record{}
	first := egress.NewMeter(1<<20, 100)
	r := Start(t.TempDir(), first, rec.write, slog.New(slog.NewTextHandler(io.Discard, nil)))
	testwait.For(t, "the starting count written", func() bool { return rec.last() == 100 })
	first.RaiseTo(5000)
	testwait.For(t, "a raised count written", func() bool { return rec.last() == 5000 })

	second := egress.NewMeter(1<<20, 7000)
	r.Follow(second)
	testwait.For(t, "the followed meter's count written", func() bool { return rec.last() == 7000 })
	first.RaiseTo(9000) // no longer followed
	second.RaiseTo(8000)
	testwait.For(t, "the followed meter's raise written", func() bool { return rec.last() == 8000 })

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
