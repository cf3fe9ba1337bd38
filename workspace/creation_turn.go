package workspace

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/wink-mcp/wink-mcp/workspace/createqueue"
)

// Bounds and default of Config.CreateParallelism (--create-parallelism).
const (
	// MaxCreateParallelism bounds Config.CreateParallelism.
	MaxCreateParallelism = 64
	// createPerCPU is how many creations run at once per CPU by default.
	// A creation spends most of its time waiting (on runc, conmon, the
	// loop mount, the agent's start), not on a core: on 2 cores, 30 made
	// at once took 9 s and 4 at a time 20 s; what fails is a hundred at
	// once, each Podman call then waiting behind all the others.
	createPerCPU = 8
)

// DefaultCreateParallelism is Config.CreateParallelism's default: eight
// creations per CPU of this machine, between 4 and 32.
func DefaultCreateParallelism() int {
	return min(max(createPerCPU*runtime.NumCPU(), 4), 32)
}

// waitReportKey carries a call's reporter of its wait for a container.
type waitReportKey struct{}

// WithWaitReport returns ctx carrying report, which is told, about every
// second, where the container a call waits for stands: how many creations
// are ahead of it, or that it is being made.
func WithWaitReport(ctx context.Context, report func(Progress)) context.Context {
	return context.WithValue(ctx, waitReportKey{}, report)
}

// poolTurnKey marks the context of a warm pool's refill, whose turn comes
// after every client's (see poolTurn).
type poolTurnKey struct{}

// poolTurn returns ctx marked as a warm pool's refill.
func poolTurn(ctx context.Context) context.Context {
	return context.WithValue(ctx, poolTurnKey{}, true)
}

// creationState is where a session's container creation stands, for the
// calls that wait for it (on the session's lock, or in the queue).
type creationState struct {
	status atomic.Pointer[string] // nil when no creation is under way
}

// set records status ("" clears it).
func (c *creationState) set(status string) {
	if status == "" {
		c.status.Store(nil)
		return
	}
	c.status.Store(&status)
}

// FollowCreation reports, every second until the returned function is
// called, where the making of the session's container stands to ctx's
// wait reporter (WithWaitReport), while it is under way: a call that waits
// for it (in the creation queue, or on the session's lock while its
// prestart makes it) is told how many creations are ahead. With no
// reporter it does nothing.
func (c *creationState) FollowCreation(ctx context.Context) (stop func()) {
	report, _ := ctx.Value(waitReportKey{}).(func(Progress))
	if report == nil {
		return func() {}
	}
	start := time.Now()
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if s := c.status.Load(); s != nil {
					report(Progress{ElapsedMillis: time.Since(start).Milliseconds(), Line: *s})
				}
			}
		}
	}()
	return func() { close(done); <-ended }
}

// waitCreationTurn waits for s's turn in the manager's creation queue
// (Config.CreateParallelism), the pool's entries after every client's,
// keeping s's creation state up to date for the calls that wait for it.
// It returns the function that ends the turn, once the container is made,
// started and answers, or ctx's error, holding nothing then.
func waitCreationTurn(ctx context.Context, s *Session) (done func(), err error) {
	q := s.m.creations
	class := createqueue.ForClient
	if ctx.Value(poolTurnKey{}) != nil {
		class = createqueue.ForPool
	}
	start := time.Now()
	waited := false
	leave, err := q.Wait(ctx, class, func(ahead int) {
		waited = true
		s.creation.set(fmt.Sprintf("waiting for %d container creations ahead of this one (at most %d run at once)", ahead, q.Limit()))
	})
	if err != nil {
		s.creation.set("")
		return nil, fmt.Errorf("waiting for a turn to make the workspace container (%d at once, --create-parallelism): %w", q.Limit(), err)
	}
	if waited {
		s.m.log.Debug("waited for a turn to make a container", "session", s.who.hash(), "waited_ms", time.Since(start).Milliseconds())
	}
	s.creation.set("making the workspace container")
	return func() { s.creation.set(""); leave() }, nil
}
