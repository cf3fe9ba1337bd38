package images

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/profiles"
)

// writingEngine answers WrittenBytes with written; the watch calls
// nothing else of its engine.
type writingEngine struct {
	engine.Engine
	written atomic.Int64
}

func (e *writingEngine) WrittenBytes(context.Context, string) (int64, error) {
	return e.written.Load(), nil
}

// TestWatchSetupDiskStopsPastTheLimit: a setup at its limit goes on; one
// past it is stopped with ErrSetupDisk, naming the limit to raise.
func TestWatchSetupDiskStopsPastTheLimit(t *testing.T) {
	eng := &writingEngine{}
	p := &profiles.Profile{Name: "p", Limits: profiles.Limits{SetupDiskBytes: 1000}}
	eng.written.Store(1000)
	ctx, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	done := make(chan struct{})
	checked := make(chan struct{}, 8)
	go func() {
		defer close(done)
		WatchSetupDisk(ctx, &countingEngine{writingEngine: eng, checked: checked}, "setup", p, stop)
	}()
	for range 2 { // two measurements at the limit
		select {
		case <-checked:
		case <-done:
			t.Fatalf("a setup at its limit was stopped: %v", context.Cause(ctx))
		}
	}
	if ctx.Err() != nil {
		t.Fatalf("a setup at its limit was stopped: %v", context.Cause(ctx))
	}
	eng.written.Store(1001)
	<-done
	cause := context.Cause(ctx)
	if !errors.Is(cause, ErrSetupDisk) || !strings.Contains(cause.Error(), "limits.setup_disk") {
		t.Errorf("cause %v, want ErrSetupDisk naming limits.setup_disk", cause)
	}
}

// countingEngine tells of each of the watch's measurements on checked.
type countingEngine struct {
	*writingEngine
	checked chan<- struct{}
}

func (e *countingEngine) WrittenBytes(ctx context.Context, name string) (int64, error) {
	n, err := e.writingEngine.WrittenBytes(ctx, name)
	select {
	case e.checked <- struct{}{}:
	default:
	}
	return n, err
}
