//go:build linux

package agent

import (
	"sync"
	"time"
)

// mutations serialises every change the file tools make (write, edit, rm,
// evaluate_python's writes) and whatever must not see one half made (a
// restore, a scan, the taking of the watched changes): each reads, decides
// and renames with no other tool change in between, so no update is lost.
// It is safe for concurrent use.
type mutations struct {
	mu sync.Mutex
	// lastSeq numbers the changes in the order they happened (see begin).
	lastSeq int64
}

// begin takes the lock every tool change holds and returns the change's
// sequence number, which orders it among all this workspace's changes, also
// across agent restarts: it is a time in nanoseconds, strictly increasing.
// The caller calls the returned function when done.
func (m *mutations) begin() (seq int64, done func()) {
	m.mu.Lock()
	m.lastSeq = max(m.lastSeq+1, time.Now().UnixNano())
	return m.lastSeq, m.mu.Unlock
}
