package images

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/profiles"
)

// setupDiskInterval is how often a setup's writes are measured.
const setupDiskInterval = time.Second

// ErrSetupDisk is the cause of a setup stopped for writing too much.
var ErrSetupDisk = errors.New("the setup wrote more than its limit")

// WatchSetupDisk stops the setup, through stop, once its container
// (called name on eng) has written more than p's setup_disk limit, until
// ctx ends.
func WatchSetupDisk(ctx context.Context, eng engine.Engine, name string, p *profiles.Profile, stop context.CancelCauseFunc) {
	limit := p.Limits.SetupDiskBytes
	if limit == 0 {
		limit = profiles.DefaultSetupDiskBytes
	}
	tick := time.NewTicker(setupDiskInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		written, err := eng.WrittenBytes(ctx, name)
		if err != nil {
			continue // the next tick tries again; the command's own end is not this watch's business
		}
		if written > limit {
			stop(fmt.Errorf("%w: it had written %s to the image (its /tmp, which is also HOME, and /workspace included), more than limits.setup_disk (%s); raise the limit or install less",
				ErrSetupDisk, checkpoints.FormatBytes(written), checkpoints.FormatBytes(limit)))
			return
		}
	}
}
