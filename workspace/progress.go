package workspace

import (
	"sync"

	"github.com/wink-mcp/wink-mcp/wire"
)

// Progress reports on a running command: how long it has run and the latest
// line it wrote.
type Progress = wire.Progress

// latestOnly delivers progress reports to report on a goroutine of its own,
// keeping only the newest while report is busy, so a slow receiver never
// stalls the channel the reports arrive on. stop ends the goroutine after
// delivering what is pending.
func latestOnly(report func(Progress)) (deliver func(Progress), stop func()) {
	var (
		mu      sync.Mutex
		pending *Progress
		closed  bool
	)
	wake := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range wake {
			mu.Lock()
			p := pending
			pending = nil
			mu.Unlock()
			if p != nil {
				report(*p)
			}
		}
	}()
	deliver = func(p Progress) {
		mu.Lock()
		defer mu.Unlock()
		if closed {
			return
		}
		pending = &p
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	stop = func() {
		mu.Lock()
		if !closed {
			closed = true
			close(wake)
		}
		mu.Unlock()
		<-done
	}
	return deliver, stop
}
