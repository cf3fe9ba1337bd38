package quota

import (
	"fmt"
	"sync"
	"time"
)

// EgressWindow is how far back a client's egress quota counts: bytes
// carried more than a day ago no longer count. A rolling day, not the
// server's lifetime, so that a client past its quota is served again
// without a restart of a server that runs for weeks, while one cannot
// spend more than the quota in any day.
const EgressWindow = 24 * time.Hour

// egressSlots is how many parts the window is counted in: hours.
const egressSlots = 24

// EgressBudget counts one principal's egress bytes, over all its
// sessions, in the last EgressWindow, against its quota. It is safe for
// concurrent use; its lock is a leaf.
type EgressBudget struct {
	ledger    *Ledger
	principal string
	limit     int64
	now       func() time.Time

	mu    sync.Mutex
	bytes [egressSlots]int64
	slot  [egressSlots]int64 // the hour (since the epoch) each part counts
}

// Egress returns principal's egress budget, the same for every call, or
// nil when there is no egress quota.
func (l *Ledger) Egress(principal string) *EgressBudget {
	if l == nil || l.limits.EgressBytes <= 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.egress[principal]
	if !ok {
		b = &EgressBudget{ledger: l, principal: principal, limit: l.limits.EgressBytes, now: time.Now}
		l.egress[principal] = b
	}
	return b
}

// Add counts n bytes carried now.
func (b *EgressBudget) Add(n int64) {
	hour := b.now().Unix() / 3600
	b.mu.Lock()
	defer b.mu.Unlock()
	i := hour % egressSlots
	if b.slot[i] != hour {
		b.slot[i], b.bytes[i] = hour, 0
	}
	b.bytes[i] += n
}

// Used returns the bytes counted in the window.
func (b *EgressBudget) Used() int64 {
	hour := b.now().Unix() / 3600
	b.mu.Lock()
	defer b.mu.Unlock()
	var sum int64
	for i := range egressSlots {
		if b.slot[i] > hour-egressSlots {
			sum += b.bytes[i]
		}
	}
	return sum
}

// Over says the quota is reached.
func (b *EgressBudget) Over() bool { return b.Used() >= b.limit }

// Refusal explains a connection refused past the quota, and tells the
// ledger's OnRefused hook of it.
func (b *EgressBudget) Refusal() (reason, remedy string) {
	if f := b.ledger.refused; f != nil {
		f(b.principal, EgressBytes)
	}
	return fmt.Sprintf("quota exceeded: egress quota: this client's sessions carried %d bytes in the last 24 hours, past the limit of %d per client (--quota-egress-bytes)",
			b.Used(), b.limit),
		"Wait until earlier traffic falls out of the rolling day, or ask the operator to raise --quota-egress-bytes."
}
