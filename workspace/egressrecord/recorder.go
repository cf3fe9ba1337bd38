// Package egressrecord keeps a kept workspace's egress count in its
// record while a session of this process has it, so that whoever opens
// the workspace next goes on from it.
//
// Its lock, Recorder.mu, guards the meter it listens to and whether it
// stopped; it is a leaf, under which only the egress.Meter's own lock is
// taken (to listen, or stop listening).
package egressrecord

import (
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wink-mcp/wink-mcp/egress"
)

// egressRecordInterval is the least time between two writes of a kept
// workspace's egress count to its record.
const egressRecordInterval = time.Second

// Recorder writes a kept workspace's egress count (EgressBytes) to its
// record while a session of this process has it: when the count
// crosses each 1/16 of the cap, is raised, or a connection ends, at most
// once a second. A server killed with SIGKILL, which never releases the
// workspace, so loses at most what the last second carried and what a
// connection still open carried since the last 1/16: whoever opens the
// workspace next goes on from the record.
type Recorder struct {
	root  string
	write func(used int64) error
	log   *slog.Logger
	meter atomic.Pointer[egress.Meter]
	wake  chan struct{}
	stop  chan struct{}
	done  chan struct{}

	mu       sync.Mutex // guards unlisten and stopped
	unlisten func()
	stopped  bool
}

// Start starts recording the egress count mt keeps for the kept workspace
// at root, through write, which raises its record's count to used.
func Start(root string, mt *egress.Meter, write func(used int64) error, log *slog.Logger) *Recorder {
	r := &Recorder{root: root, write: write, log: log, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	r.Follow(mt)
	go r.run()
	return r
}

// Follow records mt's count from now on: the session counts its egress
// with another meter (see workspace's handoffs.useMeter).
func (r *Recorder) Follow(mt *egress.Meter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	if r.unlisten != nil {
		r.unlisten()
	}
	r.meter.Store(mt)
	r.unlisten = mt.Listen(r.poke)
	r.poke()
}

// poke asks for a write without waiting.
func (r *Recorder) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *Recorder) run() {
	defer close(r.done)
	written := int64(-1)
	for {
		select {
		case <-r.stop:
			return
		case <-r.wake:
		}
		if used := r.meter.Load().Used(); used != written {
			if err := r.write(used); err != nil {
				r.log.Warn("recording a kept workspace's egress bytes", "workspace", filepath.Base(r.root), "err", err)
			} else {
				written = used
			}
		}
		select {
		case <-r.stop:
			return
		case <-time.After(egressRecordInterval):
		}
	}
}

// Close stops the recording and waits for a write in progress; it is
// safe to call twice.
func (r *Recorder) Close() {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return
	}
	r.stopped = true
	r.unlisten()
	close(r.stop)
	r.mu.Unlock()
	<-r.done
}
