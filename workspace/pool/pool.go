// Package pool keeps a warm pool: containers made, checked, started and
// connected ahead of need, each handed to one new session.
//
// Its one lock, Pool.mu, guards the ready entries and the count being
// made; nothing else is locked while it is held, and it is never held
// while an entry is made or ended. The owner may call Take under its own
// lock: Take never waits for the service, nor for an entry's lock.
package pool

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Parallel is how many pool containers are made at once: the Podman
// service makes containers one core each, and a pool refilling after a
// burst must leave it room for sessions that could not get one.
const Parallel = 4

// refillDelay is how long the pool waits after handing a container out
// before it makes a replacement: sessions come in bursts, and their first
// calls should have the cores before the replacements do.
const refillDelay = 500 * time.Millisecond

// Retry delays after a pool container could not be made.
const (
	warmRetryMin = 2 * time.Second
	warmRetryMax = time.Minute
)

// Deps is what the pool needs of its owner to make and end entries of
// type E.
type Deps[E any] struct {
	// Make makes one entry, started and connected, and returns it (to be
	// ended, even with an error) with the channel that closes when its
	// connection ends (nil when it has none).
	Make func(ctx context.Context) (e E, done <-chan struct{}, err error)
	// End removes an entry's container and files.
	End func(ctx context.Context, e E)
	// Name is what logs call an entry (its container's name).
	Name func(e E) string
	// EndTimeout bounds ending an entry the pool discards.
	EndTimeout time.Duration
	// Log receives the pool's records.
	Log *slog.Logger
}

// Pool keeps containers made, checked, started and connected ahead of
// need, each with its own fresh session directory and disk, and hands one
// to each new session (see workspace's Manager.Session). An entry is a
// session that no MCP session owns yet, made by exactly the code that
// makes any session's container, so a pooled container is one a session
// would have had. It is safe for concurrent use.
type Pool[E any] struct {
	d    Deps[E]
	size int

	mu     sync.Mutex
	ready  []pooled[E]
	making int
	closed bool
	wake   chan struct{} // a container is ready: see whether to make another
	taken  chan struct{} // a container was handed out: make another, soon

	stop context.CancelFunc
	done chan struct{}
}

// pooled is a ready entry and the end of its channel, read when it was
// added: take checks it without the entry's lock, which the package's
// lock order puts before the manager's (see the package doc).
type pooled[E any] struct {
	s    E
	done <-chan struct{}
}

// New starts filling a pool of size entries; Close stops it.
func New[E any](size int, d Deps[E]) *Pool[E] {
	ctx, stop := context.WithCancel(context.Background())
	p := &Pool[E]{d: d, size: size, wake: make(chan struct{}, 1), taken: make(chan struct{}, 1), stop: stop, done: make(chan struct{})}
	go p.fill(ctx)
	return p
}

// Take returns a ready entry whose channel is still open, or E's zero
// value; entries whose channel died while they waited are removed, never
// handed out. It never blocks on the service, nor on an entry's lock
// (Manager.Session calls it under the manager's).
func (p *Pool[E]) Take() E {
	p.mu.Lock()
	defer p.mu.Unlock()
	defer notify(p.taken)
	for len(p.ready) > 0 {
		e := p.ready[0]
		p.ready = p.ready[1:]
		select {
		case <-e.done:
		default:
			return e.s
		}
		p.d.Log.Warn("a pooled container went bad while it waited; removed, not handed out", "container", p.d.Name(e.s))
		go p.discard(e.s)
	}
	var none E
	return none
}

// Ready returns the entries ready now, oldest first.
func (p *Pool[E]) Ready() []E {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]E, 0, len(p.ready))
	for _, e := range p.ready {
		out = append(out, e.s)
	}
	return out
}

// notify wakes the filler through c without waiting.
func notify(c chan<- struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// discard removes an entry's container and files.
func (p *Pool[E]) discard(e E) {
	ctx, cancel := context.WithTimeout(context.Background(), p.d.EndTimeout)
	defer cancel()
	p.d.End(ctx, e)
}

// fill keeps size entries ready or being made, Parallel at a time,
// until ctx ends. After a failure it waits, doubling the wait up to a
// minute, so a broken service is not asked again and again.
func (p *Pool[E]) fill(ctx context.Context) {
	defer close(p.done)
	var wg sync.WaitGroup
	defer wg.Wait()
	retry := warmRetryMin
	failed := make(chan struct{}, 1) // a failure since the last wait; one is enough
	for {
		p.mu.Lock()
		for !p.closed && p.making < Parallel && len(p.ready)+p.making < p.size {
			p.making++
			wg.Go(func() {
				if !p.make(ctx) {
					notify(failed)
				}
			})
		}
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
			retry = warmRetryMin
		case <-p.taken:
			retry = warmRetryMin
			select {
			case <-ctx.Done():
				return
			case <-time.After(refillDelay):
			}
		case <-failed:
			select {
			case <-ctx.Done():
				return
			case <-time.After(retry):
			}
			retry = min(2*retry, warmRetryMax)
		}
	}
}

// make makes one entry and adds it to the pool; it reports success.
func (p *Pool[E]) make(ctx context.Context) bool {
	start := time.Now()
	e, done, err := p.d.Make(ctx)
	p.mu.Lock()
	p.making--
	keep := done != nil && !p.closed
	if keep {
		p.ready = append(p.ready, pooled[E]{s: e, done: done})
	}
	p.mu.Unlock()
	if keep {
		p.d.Log.Debug("pooled container ready", "container", p.d.Name(e), "duration_ms", time.Since(start).Milliseconds())
		notify(p.wake)
		return true
	}
	if err != nil && ctx.Err() == nil {
		p.d.Log.Warn("making a pooled container failed; trying again later", "err", err)
	}
	p.discard(e)
	return err == nil
}

// Close stops filling and removes every entry, made or being made.
func (p *Pool[E]) Close(ctx context.Context) {
	p.mu.Lock()
	p.closed = true
	ready := p.ready
	p.ready = nil
	p.mu.Unlock()
	p.stop()
	var wg sync.WaitGroup
	for _, e := range ready {
		wg.Go(func() { p.d.End(ctx, e.s) })
	}
	wg.Wait()
	<-p.done
}
