package workspace

import (
	"context"
	"errors"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/wink-mcp/wink-mcp/wire"
)

// ErrStoppedForRestore ends a command that was running when its workspace
// was restored to a checkpoint.
var ErrStoppedForRestore = errors.New("the command was stopped because the workspace was restored to a checkpoint (workspace_restore); run it again if it is still needed")

// gateAll is the weight that takes a gate whole.
const gateAll = 1 << 30

// gate orders a session's calls around its checkpoints and restores. File
// calls share files; a checkpoint takes it whole, so it never sees a tool
// change half made. Commands share procs; a restore stops the running
// ones and takes both whole, so nothing changes the files while they are
// put back. A waiting whole taker goes before later sharers (semaphore
// order), and every wait ends with its call's context.
type gate struct {
	files, procs *semaphore.Weighted

	mu      sync.Mutex
	running map[*context.CancelCauseFunc]struct{} // commands in flight, to stop for a restore
}

func newGate() *gate {
	return &gate{files: semaphore.NewWeighted(gateAll), procs: semaphore.NewWeighted(gateAll), running: map[*context.CancelCauseFunc]struct{}{}}
}

// Which parts of the gate an agent operation takes.
const (
	takesFiles = 1 << iota
	takesProcs
)

// gateOf says which parts of the gate an operation shares; the checkpoint
// operations, the pings and the job queries take none.
func gateOf(op string) int {
	switch op {
	case wire.OpList, wire.OpRead, wire.OpReadBytes, wire.OpWrite, wire.OpEdit, wire.OpGlob, wire.OpGrep, wire.OpRemove:
		return takesFiles
	case wire.OpExec, wire.OpJobStart:
		return takesProcs
	case wire.OpPython:
		return takesFiles | takesProcs
	}
	return 0
}

// enter shares the parts of the gate op needs, waiting while a checkpoint
// or a restore holds them. It returns the context the call runs with (a
// restore cancels a command's) and the function that leaves.
func (g *gate) enter(ctx context.Context, op string) (context.Context, func(), error) {
	parts := gateOf(op)
	var leave []func()
	done := func() {
		for i := len(leave) - 1; i >= 0; i-- {
			leave[i]()
		}
	}
	if parts&takesProcs != 0 {
		if err := acquire(ctx, g.procs, 1); err != nil {
			return ctx, done, err
		}
		leave = append(leave, func() { g.procs.Release(1) })
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		g.mu.Lock()
		g.running[&cancel] = struct{}{}
		g.mu.Unlock()
		leave = append(leave, func() {
			g.mu.Lock()
			delete(g.running, &cancel)
			g.mu.Unlock()
			cancel(nil)
		})
	}
	if parts&takesFiles != 0 {
		if err := acquire(ctx, g.files, 1); err != nil {
			done()
			return ctx, func() {}, err
		}
		leave = append(leave, func() { g.files.Release(1) })
	}
	return ctx, done, nil
}

// acquire waits for n of sem, saying what it waited for when ctx ends first.
func acquire(ctx context.Context, sem *semaphore.Weighted, n int64) error {
	if err := sem.Acquire(ctx, n); err != nil {
		return errors.New("the call was cancelled while it waited for a checkpoint or restore of the workspace to finish")
	}
	return nil
}

// lockFiles takes the files part whole, for a checkpoint.
func (g *gate) lockFiles(ctx context.Context) (func(), error) {
	if err := acquire(ctx, g.files, gateAll); err != nil {
		return nil, err
	}
	return func() { g.files.Release(gateAll) }, nil
}

// tryLockFiles takes the files part whole if no call holds it.
func (g *gate) tryLockFiles() (func(), bool) {
	if !g.files.TryAcquire(gateAll) {
		return nil, false
	}
	return func() { g.files.Release(gateAll) }, true
}

// lockAll takes both parts whole, for a restore: once no new command can
// start, the running ones are cancelled (and cancelled again, every 200
// ms, should one slip in) until the last has returned. It returns how many
// commands it stopped.
func (g *gate) lockAll(ctx context.Context) (unlock func(), stopped int, err error) {
	got := make(chan error, 1)
	go func() { got <- g.procs.Acquire(ctx, gateAll) }()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	stopped = g.stopRunning()
	for waiting := true; waiting; {
		select {
		case err := <-got:
			if err != nil {
				return nil, stopped, errors.New("the restore was cancelled while it stopped the running commands")
			}
			waiting = false
		case <-tick.C:
			stopped += g.stopRunning()
		}
	}
	if err := acquire(ctx, g.files, gateAll); err != nil {
		g.procs.Release(gateAll)
		return nil, stopped, err
	}
	return func() {
		g.files.Release(gateAll)
		g.procs.Release(gateAll)
	}, stopped, nil
}

// stopRunning cancels the commands in flight and says how many there were.
func (g *gate) stopRunning() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	for cancel := range g.running {
		(*cancel)(ErrStoppedForRestore)
	}
	n := len(g.running)
	clear(g.running)
	return n
}

// commandsRunning reports whether a command holds the procs part now.
func (g *gate) commandsRunning() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.running) > 0
}
