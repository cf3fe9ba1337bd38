package workspace

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"
)

// MaxWarm bounds Config.Warm.
const MaxWarm = 256

// warmParallel is how many pool containers are made at once: the Podman
// service makes containers one core each, and a pool refilling after a
// burst must leave it room for sessions that could not get one.
const warmParallel = 4

// refillDelay is how long the pool waits after handing a container out
// before it makes a replacement: sessions come in bursts, and their first
// calls should have the cores before the replacements do.
const refillDelay = 500 * time.Millisecond

// Retry delays after a pool container could not be made.
const (
	warmRetryMin = 2 * time.Second
	warmRetryMax = time.Minute
)

// warmPool keeps containers made, checked, started and connected ahead of
// need, each with its own fresh session directory and disk, and hands one
// to each new session (see Manager.Session). An entry is a Session that no
// MCP session owns yet, made by exactly the code that makes any session's
// container, so a pooled container is one a session would have had.
type warmPool struct {
	m    *Manager
	size int

	mu     sync.Mutex
	ready  []pooled
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
type pooled struct {
	s    *Session
	done <-chan struct{}
}

func newWarmPool(m *Manager, size int) *warmPool {
	ctx, stop := context.WithCancel(context.Background())
	p := &warmPool{m: m, size: size, wake: make(chan struct{}, 1), taken: make(chan struct{}, 1), stop: stop, done: make(chan struct{})}
	go p.fill(ctx)
	return p
}

// take returns a ready entry whose channel is still open, or nil; entries
// whose channel died while they waited are removed, never handed out. It
// never blocks on the service, nor on an entry's lock (Manager.Session
// calls it under the manager's).
func (p *warmPool) take() *Session {
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
		p.m.log.Warn("a pooled container went bad while it waited; removed, not handed out", "container", e.s.name)
		go p.discard(e.s)
	}
	return nil
}

// notify wakes the filler through c without waiting.
func notify(c chan<- struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// discard removes an entry's container and files.
func (p *warmPool) discard(e *Session) {
	ctx, cancel := context.WithTimeout(context.Background(), p.m.cfg.APITimeout)
	defer cancel()
	e.end(ctx)
}

// fill keeps size entries ready or being made, warmParallel at a time,
// until ctx ends. After a failure it waits, doubling the wait up to a
// minute, so a broken service is not asked again and again.
func (p *warmPool) fill(ctx context.Context) {
	defer close(p.done)
	var wg sync.WaitGroup
	defer wg.Wait()
	retry := warmRetryMin
	failed := make(chan struct{}, 1) // a failure since the last wait; one is enough
	for {
		p.mu.Lock()
		for !p.closed && p.making < warmParallel && len(p.ready)+p.making < p.size {
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
func (p *warmPool) make(ctx context.Context) bool {
	e := p.m.newSession("", newWarmKey())
	start := time.Now()
	_, err := e.Start(ctx)
	var done <-chan struct{}
	if err == nil {
		e.mu.Lock()
		if e.client != nil {
			done = e.client.Done()
		}
		e.mu.Unlock()
	}
	p.mu.Lock()
	p.making--
	keep := done != nil && !p.closed
	if keep {
		p.ready = append(p.ready, pooled{s: e, done: done})
	}
	p.mu.Unlock()
	if keep {
		p.m.log.Debug("pooled container ready", "container", e.name, "duration_ms", time.Since(start).Milliseconds())
		notify(p.wake)
		return true
	}
	if err != nil && ctx.Err() == nil {
		p.m.log.Warn("making a pooled container failed; trying again later", "err", err)
	}
	p.discard(e)
	return err == nil
}

// close stops filling and removes every entry, made or being made.
func (p *warmPool) close(ctx context.Context) {
	p.mu.Lock()
	p.closed = true
	ready := p.ready
	p.ready = nil
	p.mu.Unlock()
	p.stop()
	var wg sync.WaitGroup
	for _, e := range ready {
		wg.Go(func() { e.s.end(ctx) })
	}
	wg.Wait()
	<-p.done
}

// newWarmKey names a pooled container and its directory before any
// session owns it: as random as a session hash, and as long.
func newWarmKey() string {
	var b [sessionHashLen / 2]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
