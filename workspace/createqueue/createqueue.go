// Package createqueue bounds how many workspace containers are made at
// once. A burst of sessions (a hundred opened together) asked the engine
// for every container at the same moment: each of its calls then waited
// behind all the others, and calls failed on their own deadline (the
// Podman service "did not answer within" --podman-timeout) only because
// the engine was busy. Behind a Queue, at most its limit of creations run
// at once and the rest wait their turn, in order, for as long as their
// caller's context allows, told how many creations are ahead of them.
//
// Waiters come in two classes: a creation some client waits for (a call,
// a session's prestart) goes before the warm pool's refills, which wait
// until no client's creation is queued.
//
// Its one lock, Queue.mu, is never held while a caller runs or reports.
package createqueue

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// Class is whose creation waits: a client's, or the warm pool's.
type Class int

const (
	// ForClient is a creation a client waits for: a call's, or a new
	// session's prestart.
	ForClient Class = iota
	// ForPool is a warm pool's refill: it waits while any client's
	// creation is queued.
	ForPool
)

// ReportEvery is how often a waiter is told how many creations are ahead
// of it, besides once as it starts to wait.
const ReportEvery = 2 * time.Second

// Queue lets at most its limit of creations run at once; the others wait
// in order of arrival, clients' before the pool's. It is safe for
// concurrent use; the zero value is not usable (see New).
type Queue struct {
	limit int

	mu      sync.Mutex
	running int
	waiting [2]*list.List // of *waiter, by Class
}

// waiter is one creation waiting its turn; ready closes when it is let
// in (its slot is then counted in Queue.running).
type waiter struct {
	ready chan struct{}
}

// New returns a queue letting limit creations run at once (at least 1).
func New(limit int) *Queue {
	return &Queue{limit: max(limit, 1), waiting: [2]*list.List{list.New(), list.New()}}
}

// Limit returns how many creations run at once.
func (q *Queue) Limit() int { return q.limit }

// Stats is what a queue holds now.
type Stats struct {
	// Running is how many creations run now.
	Running int
	// Waiting is how many wait to start.
	Waiting int
}

// Stats returns how many creations run and wait now.
func (q *Queue) Stats() Stats {
	q.mu.Lock()
	defer q.mu.Unlock()
	return Stats{Running: q.running, Waiting: q.waiting[ForClient].Len() + q.waiting[ForPool].Len()}
}

// Wait returns when the caller may make its container, with the function
// to call (once; later calls do nothing) when the creation is done, or
// with ctx's error when ctx ends first: the caller then leaves the queue
// at once and holds nothing. While it waits, ahead (if not nil) is told
// how many creations run or wait before it, as it starts to wait and
// every ReportEvery after; ahead runs on the caller's goroutine, without
// the queue's lock.
func (q *Queue) Wait(ctx context.Context, class Class, ahead func(n int)) (done func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	q.mu.Lock()
	if q.running < q.limit && q.waiting[ForClient].Len() == 0 && (class == ForClient || q.waiting[ForPool].Len() == 0) {
		q.running++
		q.mu.Unlock()
		return q.releaser(), nil
	}
	w := &waiter{ready: make(chan struct{})}
	e := q.waiting[class].PushBack(w)
	n := q.aheadLocked(class, e)
	q.mu.Unlock()
	if ahead != nil {
		ahead(n)
	}
	tick := time.NewTicker(ReportEvery)
	defer tick.Stop()
	for {
		select {
		case <-w.ready:
			return q.releaser(), nil
		case <-ctx.Done():
			q.mu.Lock()
			select {
			case <-w.ready: // let in as ctx ended: give the slot on
				q.mu.Unlock()
				q.releaser()()
			default:
				q.waiting[class].Remove(e)
				q.mu.Unlock()
			}
			return nil, ctx.Err()
		case <-tick.C:
			if ahead == nil {
				continue
			}
			q.mu.Lock()
			select {
			case <-w.ready:
				q.mu.Unlock()
				return q.releaser(), nil
			default:
			}
			n := q.aheadLocked(class, e)
			q.mu.Unlock()
			ahead(n)
		}
	}
}

// aheadLocked counts the creations running and waiting before e, a
// waiter of class.
func (q *Queue) aheadLocked(class Class, e *list.Element) int {
	n := q.running
	if class == ForPool {
		n += q.waiting[ForClient].Len()
	}
	for p := e.Prev(); p != nil; p = p.Prev() {
		n++
	}
	return n
}

// releaser returns the function that gives a running creation's slot to
// the next waiter, once.
func (q *Queue) releaser() func() {
	var once sync.Once
	return func() { once.Do(q.release) }
}

// release ends one running creation and lets the next waiter in: the
// oldest client's, else the oldest of the pool's.
func (q *Queue) release() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.running--
	for _, l := range q.waiting {
		if e := l.Front(); e != nil && q.running < q.limit {
			l.Remove(e)
			q.running++
			close(e.Value.(*waiter).ready)
			return
		}
	}
}
