package images

import (
	"context"
	"sync"
	"time"

	"github.com/wink-mcp/wink-mcp/wire"
)

// Builds are the image builds in progress in this process, by image key.
// They end with their owner: Close cancels them and waits for them to
// return. The zero value is not usable: make one with NewBuilds.
type Builds struct {
	ctx     context.Context
	stop    context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	running map[string]*Build
}

// NewBuilds returns an empty set of builds, running until Close.
func NewBuilds() *Builds {
	b := &Builds{running: map[string]*Build{}}
	b.ctx, b.stop = context.WithCancel(context.Background())
	return b
}

// Close cancels the builds in progress and waits for each to return
// (each removes its setup container as it ends).
func (bs *Builds) Close() {
	bs.stop()
	bs.wg.Wait()
}

// Build is one image build; its waiters follow its status until Done
// closes.
type Build struct {
	done  chan struct{}
	image string
	err   error
	// ran says the setup ran, rather than another process's image being
	// found once its lock was free.
	ran    bool
	status sync.Mutex
	line   string
	start  time.Time
}

// SetStatus sets the line the build's waiters are shown.
func (b *Build) SetStatus(line string) {
	b.status.Lock()
	b.line = line
	b.status.Unlock()
}

// Report is the build's progress: its time so far and its status line.
func (b *Build) Report() wire.Progress {
	b.status.Lock()
	defer b.status.Unlock()
	return wire.Progress{ElapsedMillis: time.Since(b.start).Milliseconds(), Line: b.line}
}

// Done closes when the build has returned.
func (b *Build) Done() <-chan struct{} { return b.done }

// Result is the build's image, whether it ran the setup, and its error;
// valid once Done has closed.
func (b *Build) Result() (image string, ran bool, err error) { return b.image, b.ran, b.err }

// Start returns the build of key in progress in this process, or starts
// it with run, on the builds' context. The build is the owner's, not the
// caller's: a caller that stops waiting leaves it to finish for the next.
func (bs *Builds) Start(key string, run func(ctx context.Context, b *Build) (image string, ran bool, err error)) *Build {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if b := bs.running[key]; b != nil {
		return b
	}
	b := &Build{done: make(chan struct{}), start: time.Now()}
	bs.running[key] = b
	bs.wg.Add(1)
	go func() {
		defer bs.wg.Done()
		b.image, b.ran, b.err = run(bs.ctx, b)
		bs.mu.Lock()
		delete(bs.running, key)
		bs.mu.Unlock()
		close(b.done)
	}()
	return b
}
