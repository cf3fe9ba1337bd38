package workspace

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

// egressRecorder writes a kept workspace's egress count (EgressBytes) to
// its record while a session of this process has it: when the count
// crosses each 1/16 of the cap, is raised, or a connection ends, at most
// once a second. A server killed with SIGKILL, which never releases the
// workspace, so loses at most what the last second carried and what a
// connection still open carried since the last 1/16: whoever opens the
// workspace next goes on from the record.
type egressRecorder struct {
	root  string
	log   *slog.Logger
	meter atomic.Pointer[egress.Meter]
	wake  chan struct{}
	stop  chan struct{}
	done  chan struct{}

	mu       sync.Mutex // guards unlisten and stopped
	unlisten func()
	stopped  bool
}

// recordEgress starts recording the egress count mt keeps for k.
func (k *keptWorkspace) recordEgress(mt *egress.Meter, log *slog.Logger) {
	r := &egressRecorder{root: k.root, log: log, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	r.follow(mt)
	k.egress = r
	go r.run()
}

// stopRecordingEgress stops the recording, before the caller writes the
// record itself (release, a handoff's reserve); it is safe to call twice.
func (k *keptWorkspace) stopRecordingEgress() {
	if r := k.egress; r != nil {
		r.close()
	}
}

// follow records mt's count from now on: the session counts its egress
// with another meter (see Session.useMeter).
func (r *egressRecorder) follow(mt *egress.Meter) {
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
func (r *egressRecorder) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *egressRecorder) run() {
	defer close(r.done)
	written := int64(-1)
	for {
		select {
		case <-r.stop:
			return
		case <-r.wake:
		}
		if used := r.meter.Load().Used(); used != written {
			if err := writeEgressBytes(r.root, used); err != nil {
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

// close stops the recording and waits for a write in progress.
func (r *egressRecorder) close() {
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

// writeEgressBytes raises the record's EgressBytes of the kept workspace at
// root to used.
func writeEgressBytes(root string, used int64) error {
	rec, err := readRecord(root)
	if err != nil {
		return err
	}
	if rec.EgressBytes >= used {
		return nil
	}
	rec.EgressBytes = used
	return writeJSON(filepath.Join(root, recordFile), rec)
}
