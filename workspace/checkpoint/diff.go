package checkpoint

import (
	"context"
	"io"
	"strings"

	"github.com/wink-mcp/wink-mcp/changes"
	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/workspace/difftext"
)

// Now names the workspace as it is now in CheckpointDiff.
const Now = "now"

// CheckpointDiff diffs the changes from checkpoint from to checkpoint to
// (or to the workspace now, Now), under prefix ("" for all), as a unified
// diff of at most difftext.MaxBytes.
func (r *Room) CheckpointDiff(ctx context.Context, from, to, prefix string) (difftext.Result, error) {
	defer r.deps.Enter()()
	return difftext.Capped(func(w io.Writer) error {
		return r.diff(ctx, from, to, prefix, w, difftext.TextLimit)
	})
}

// diff writes to w the changes from checkpoint from to checkpoint to (or
// to the workspace now, Now), under prefix ("" for all), as a unified
// diff, showing as text files of up to textLimit bytes; it stops with
// w's error. Directories whose trees are equal are not walked, so its
// cost follows what changed.
func (r *Room) diff(ctx context.Context, from, to, prefix string, w io.Writer, textLimit int64) error {
	st, err := r.Store()
	if err != nil {
		return err
	}
	base, err := st.Get(from)
	if err != nil {
		return err
	}
	root := ""
	if to == Now {
		now, unpin, err := r.snapshotNow(ctx, st)
		if err != nil {
			return err
		}
		defer unpin()
		root = now
	} else {
		cp, err := st.Get(to)
		if err != nil {
			return err
		}
		root = cp.Root
	}
	a, b := st.FS(base.Root), st.FS(root)
	folder := changes.CompareTrees(a, b, func(rel string) ([]string, error) { return differingNames(a, b, rel) })
	list, err := folder.Changes(ctx)
	if err != nil {
		return err
	}
	list = changesAt(list, prefix)
	_, err = folder.WritePatch(ctx, w, list, changes.PatchOptions{TextLimit: textLimit})
	return err
}

// snapshotNow stores the workspace as it is now, not as a checkpoint, and
// keeps it from collection until unpin is called.
func (r *Room) snapshotNow(ctx context.Context, st *checkpoints.Store) (root string, unpin func(), err error) {
	if err := r.SettlePendingRestore(ctx); err != nil {
		return "", nil, err
	}
	unlock, err := r.deps.LockFiles(ctx)
	if err != nil {
		return "", nil, err
	}
	defer unlock()
	client, err := r.deps.Ensure(ctx)
	if err != nil {
		return "", nil, err
	}
	snap, err := r.snapshot(ctx, client, st)
	if err != nil {
		return "", nil, err
	}
	defer snap.Done()
	r.saveIndex(snap.Index)
	return snap.Root, st.Pin(snap.Root), nil
}

// differingNames lists the names in the directory at rel of two trees
// whose entries differ: an entry that is the same object, kind and mode
// on both sides is left out, and so is everything under it.
func differingNames(a, b *checkpoints.TreeFS, rel string) ([]string, error) {
	dir := rel
	if dir == "" {
		dir = "."
	}
	x, err := a.Entries(dir)
	if err != nil {
		return nil, err
	}
	y, err := b.Entries(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case j >= len(y) || (i < len(x) && x[i].Name < y[j].Name):
			out = append(out, x[i].Name)
			i++
		case i >= len(x) || y[j].Name < x[i].Name:
			out = append(out, y[j].Name)
			j++
		default:
			if x[i] != y[j] {
				out = append(out, x[i].Name)
			}
			i++
			j++
		}
	}
	return out, nil
}

// changesAt keeps the changes whose path is prefix or under it.
func changesAt(list []changes.Change, prefix string) []changes.Change {
	if prefix == "" {
		return list
	}
	var out []changes.Change
	for _, c := range list {
		if c.Path == prefix || strings.HasPrefix(c.Path, prefix+"/") {
			out = append(out, c)
		}
	}
	return out
}
