//go:build linux

package agent

import (
	"context"
	"time"

	"github.com/wink-mcp/wink-mcp/wire"
)

const (
	// coalesceWindow is how long a report waits after the first change
	// for more of the same burst: at most a few reports a second.
	coalesceWindow = 100 * time.Millisecond
	// maxChangesWait bounds OpChanges' wait.
	maxChangesWait = time.Minute
	// inlineChanges is the most changes a command's own result carries;
	// OpChanges reports the rest.
	inlineChanges = 256
)

// changes answers OpChanges: it waits up to args.WaitMillis for a change,
// lets a burst go on for coalesceWindow, and reports what is pending.
func (a *Agent) changes(ctx context.Context, args wire.ChangesArgs) (*wire.ChangesResult, *wire.Error) {
	wait := min(time.Duration(args.WaitMillis)*time.Millisecond, maxChangesWait)
	if wait > 0 {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		for !a.watch.reportable() {
			select {
			case <-a.watch.ready:
			case <-timer.C:
				return a.reportChanges(wire.MaxChanges), nil
			case <-ctx.Done():
				return nil, wire.Errorf(wire.CodeCancelled, "cancelled")
			}
		}
		select {
		case <-time.After(coalesceWindow):
		case <-ctx.Done():
			return nil, wire.Errorf(wire.CodeCancelled, "cancelled")
		}
	}
	return a.reportChanges(wire.MaxChanges), nil
}

// reportChanges takes at most n pending changes, and the watch's status.
func (a *Agent) reportChanges(n int) *wire.ChangesResult {
	changes, more := a.takeChanges(n)
	return &wire.ChangesResult{Changes: changes, More: more, Watch: a.watch.status()}
}

// takeChanges takes at most n pending changes. It holds the mutation
// lock, so no tool change is half made and the changes get one number in
// the order of the tools' own.
func (a *Agent) takeChanges(n int) ([]wire.Change, bool) {
	seq, done := a.mutations.begin()
	defer done()
	return a.watch.take(n, seq)
}

// commandChanges is what a command that just ended reports of the
// workspace's changes in its own result.
func (a *Agent) commandChanges() []wire.Change {
	a.watch.commandEnded()
	changes, _ := a.takeChanges(inlineChanges)
	return changes
}
