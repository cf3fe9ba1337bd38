package kubernetes

import (
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// maxClockSkew is how far apart the clocks of two servers' machines may
// be for a Lease's renewTime, written by its holder's clock, to be judged
// by another's: a Lease older than its duration plus this by the judge's
// clock is expired at once.
const maxClockSkew = LeaseDuration

// leaseClock judges whether Leases expired, by this machine's clock only:
// a Lease whose resourceVersion this engine has seen unchanged for its
// whole duration was not renewed in that time, whatever the holder's
// clock says. A Lease first seen now is judged by its renewTime, with
// maxClockSkew to spare. Safe for concurrent use.
type leaseClock struct {
	mu   sync.Mutex
	seen map[string]seenVersion // by Lease name
}

// seenVersion is a Lease's resourceVersion and when this engine first saw it.
type seenVersion struct {
	version string
	since   time.Time
}

// expired reports whether the Lease was not renewed for longer than its
// duration, recording its version as seen now.
func (lc *leaseClock) expired(l *coordinationv1.Lease, now time.Time) bool {
	if l.DeletionTimestamp != nil {
		return true
	}
	duration := LeaseDuration
	if l.Spec.LeaseDurationSeconds != nil {
		duration = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	renewed := l.CreationTimestamp.Time
	if l.Spec.RenewTime != nil {
		renewed = l.Spec.RenewTime.Time
	}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.seen == nil {
		lc.seen = map[string]seenVersion{}
	}
	s, ok := lc.seen[l.Name]
	if !ok || s.version != l.ResourceVersion {
		s = seenVersion{version: l.ResourceVersion, since: now}
		lc.seen[l.Name] = s
	}
	return now.Sub(s.since) > duration || now.Sub(renewed) > duration+maxClockSkew
}

// forgetAllBut drops what was seen of Leases not among present.
func (lc *leaseClock) forgetAllBut(present []coordinationv1.Lease) {
	keep := make(map[string]bool, len(present))
	for _, l := range present {
		keep[l.Name] = true
	}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	for name := range lc.seen {
		if !keep[name] {
			delete(lc.seen, name)
		}
	}
}
