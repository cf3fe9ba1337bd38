package checkpoint

import (
	"context"

	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/wire"
	"github.com/wink-mcp/wink-mcp/workspace/capture"
	"github.com/wink-mcp/wink-mcp/workspace/steps"
)

// snapshotState is a state of the workspace written to the store (package
// capture) with the times of the steps that wrote it: scan, fetch, trees,
// then the caller'r.
type snapshotState struct {
	*capture.State
	steps *steps.Times
}

// snapshot writes the workspace's current state to st, but for the
// read-only mounts; files whose state the session's index knows are not
// read again.
func (r *Room) snapshot(ctx context.Context, client *wire.Client, st *checkpoints.Store) (*snapshotState, error) {
	times := steps.Start()
	snap, err := capture.Snapshot(ctx, client, st, r.deps.SkipPaths(), r.lastIndex, times.Done)
	if err != nil {
		return nil, err
	}
	return &snapshotState{State: snap, steps: times}, nil
}
