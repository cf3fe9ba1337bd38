package checkpoint

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/wire"
	"github.com/wink-mcp/wink-mcp/workspace/capture"
)

// maxApplySteps bounds the steps of one OpApply request.
const maxApplySteps = 4096

// restoreCounts counts entries by what a restore did to them.
type restoreCounts struct{ Removed, Written, Unchanged int }

// restoreTo makes the workspace match the tree root: it removes what the
// tree lacks, writes what differs, leaves the rest, and then checks the
// result against the tree. current is a scan of the workspace as it is,
// or nil to scan it.
func (r *Room) restoreTo(ctx context.Context, client *wire.Client, st *checkpoints.Store, root string, current []wire.ScanEntry) (restoreCounts, error) {
	if current == nil {
		var err error
		if current, _, err = capture.ScanAll(ctx, client, r.deps.SkipPaths()); err != nil {
			return restoreCounts{}, err
		}
	}
	p, target, err := r.planTo(ctx, client, st, root, current)
	if err != nil {
		return restoreCounts{}, err
	}
	return r.applyTo(ctx, client, st, p, target)
}

// planTo works out the steps from current to the tree root, in an order
// the workspace's disk has room for: a file is written beside the one it
// replaces when the disk holds both, else the files to replace are
// removed first; a checkpoint that does not fit either way is refused
// with a noRoomError.
func (r *Room) planTo(ctx context.Context, client *wire.Client, st *checkpoints.Store, root string, current []wire.ScanEntry) (restorePlan, []treeEntry, error) {
	target, err := walkTree(st.FS(root))
	if err != nil {
		return restorePlan{}, nil, err
	}
	disk, err := r.diskSpace(ctx, client)
	if err != nil {
		return restorePlan{}, nil, err
	}
	idx := r.lastIndex()
	p := planRestore(current, target, idx, false)
	if p.space(current, disk.BlockSize).fits(disk) {
		return p, target, nil
	}
	p = planRestore(current, target, idx, true)
	if need := p.space(current, disk.BlockSize); !need.fits(disk) {
		return p, target, &noRoomError{need: need, disk: disk, files: filesBytes(current)}
	}
	return p, target, nil
}

// applyTo makes the steps of p and checks the workspace against target.
func (r *Room) applyTo(ctx context.Context, client *wire.Client, st *checkpoints.Store, p restorePlan, target []treeEntry) (restoreCounts, error) {
	if err := r.applyPlan(ctx, client, st, p.steps); err != nil {
		return p.counts, err
	}
	after, started, err := capture.ScanAll(ctx, client, r.deps.SkipPaths())
	if err != nil {
		return p.counts, err
	}
	if err := matches(after, target); err != nil {
		return p.counts, fmt.Errorf("the workspace does not match the checkpoint after the restore: %w", err)
	}
	r.saveIndex(indexAfterRestore(after, target, started))
	return p.counts, nil
}

// applyPlan sends the steps, with the bytes of the files they write read
// from the store, a request at a time within the wire's limits.
func (r *Room) applyPlan(ctx context.Context, client *wire.Client, st *checkpoints.Store, steps []planStep) error {
	var batch []wire.ApplyStep
	var batchBytes int
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		var out wire.ApplyResult
		err := client.Call(ctx, wire.OpApply, wire.ApplyArgs{Steps: batch}, &out)
		batch, batchBytes = batch[:0], 0
		return err
	}
	add := func(step wire.ApplyStep) error {
		cost := len(step.Data) + len(step.Path.String()) + 64
		if step.Target != nil {
			cost += len(step.Target.String())
		}
		if len(batch) == maxApplySteps || batchBytes+cost > wire.MaxChunkBytes {
			if err := flush(); err != nil {
				return err
			}
		}
		batch = append(batch, step)
		batchBytes += cost
		return nil
	}
	for _, ps := range steps {
		if ps.blob == "" {
			if err := add(ps.ApplyStep); err != nil {
				return err
			}
			continue
		}
		if err := addUpload(st, ps, add); err != nil {
			return err
		}
	}
	return flush()
}

// addUpload adds the write steps of one file, its content read from the
// store in chunks.
func addUpload(st *checkpoints.Store, ps planStep, add func(wire.ApplyStep) error) error {
	r, err := st.OpenBlob(ps.blob)
	if err != nil {
		return err
	}
	defer r.Close()
	var token [8]byte
	_, _ = rand.Read(token[:])
	upload := hex.EncodeToString(token[:])
	buf := make([]byte, wire.MaxChunkBytes/2)
	var offset int64
	for {
		n, err := io.ReadFull(r, buf)
		last := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
		if err != nil && !last {
			return fmt.Errorf("reading checkpoint content for %s: %w", ps.Path.String(), err)
		}
		step := ps.ApplyStep
		step.Data, step.Offset, step.Upload, step.Final = append([]byte(nil), buf[:n]...), offset, upload, last
		if err := add(step); err != nil {
			return err
		}
		offset += int64(n)
		if last {
			return nil
		}
	}
}
