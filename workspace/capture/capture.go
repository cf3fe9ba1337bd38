// Package capture writes the state of a session's /workspace to its
// checkpoint store: it lists the workspace through the agent, reads the
// files the index does not know (many small ones to a request, large ones
// a chunk at a time, a few requests in flight), stores each once under its
// content's hash, and builds the trees.
//
// Its one lock, State.mu, guards a snapshot's index while its files are
// read at once; it is a leaf. The caller holds the session's gate, so
// nothing else changes the files' index meanwhile.
package capture

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/wire"
)

// RacyWindow is how close to its read a file's change time must be for
// its state not to be trusted later: the kernel's timestamps move in clock
// ticks, so a file changed again within one could keep the same state.
const RacyWindow = time.Second

// fetchTries is how often a file that changes while it is read is read
// again before the last read is kept as it is.
const fetchTries = 3

// State is a state of the workspace written to the store: its root tree,
// what it holds, and the files' state for the index. Done must be called
// once the root is committed or pinned, or Abort when it will not be.
type State struct {
	Build                        *checkpoints.Build
	Root                         string
	Files, Dirs, Symlinks, Fifos int
	Bytes                        int64
	Skipped                      []string
	Fetched                      int
	Entries                      []wire.ScanEntry // the scan saved

	mu    sync.Mutex        // guards Index while files are fetched at once
	Index checkpoints.Index // the files' state, read once Snapshot returns
}

// Done tells the store the snapshot's root is committed or pinned.
func (r *State) Done() { r.Build.Done() }

// Abort drops what the snapshot wrote: a refused checkpoint leaves nothing
// in the store.
func (r *State) Abort() { r.Build.Abort() }

// ScanAll lists the workspace's entries but the paths skip names, page by
// page, and when the walk began.
func ScanAll(ctx context.Context, client *wire.Client, skip []string) ([]wire.ScanEntry, int64, error) {
	args := wire.ScanArgs{Skip: skip, Limit: wire.ScanPageEntries}
	var all []wire.ScanEntry
	var started int64
	for {
		var page wire.ScanResult
		if err := client.Call(ctx, wire.OpScan, args, &page); err != nil {
			return nil, 0, fmt.Errorf("scanning /workspace: %w", err)
		}
		if started == 0 {
			started = page.StartedUnixNanos
		}
		all = append(all, page.Entries...)
		if len(all) > wire.MaxScanEntries {
			return nil, 0, fmt.Errorf("/workspace holds more than %d entries, more than a checkpoint keeps; remove what can be made again (build outputs, caches, node_modules)", wire.MaxScanEntries)
		}
		if !page.More || len(page.Entries) == 0 {
			return all, started, nil
		}
		args.After = page.Entries[len(page.Entries)-1].Path
	}
}

// StatOf is what the index compares of a scanned file.
func StatOf(e wire.ScanEntry) checkpoints.Stat {
	return checkpoints.Stat{Size: e.Size, Mtime: e.Mtime, Ctime: e.Ctime, Ino: e.Ino}
}

// Snapshot writes the workspace's current state but the paths skip names
// to st: files whose state the index last returns (read once the scan
// is done) knows are not read again; the others are read through the
// agent and stored once, under their content's hash. step is told the end
// of each step (scan, fetch, trees).
func Snapshot(ctx context.Context, client *wire.Client, st *checkpoints.Store, skip []string, last func() checkpoints.Index, step func(name string)) (*State, error) {
	entries, _, err := ScanAll(ctx, client, skip)
	if err != nil {
		return nil, err
	}
	step("scan")
	prev := last()
	res := &State{Build: st.Build(), Index: checkpoints.Index{}, Entries: entries}
	hashes := make([]string, len(entries))
	var fetch []int
	var need int64
	for i, e := range entries {
		p := e.Path.String()
		switch e.Kind {
		case wire.KindFile:
			if k, ok := prev[p]; ok && k.Hash != "" && k.Stat == StatOf(e) && st.Has(k.Hash) {
				hashes[i], res.Index[p] = k.Hash, k
				continue
			}
			fetch = append(fetch, i)
			need += e.Size
		case wire.KindSocket, wire.KindDevice:
			res.Skipped = append(res.Skipped, p+" ("+e.Kind+")")
		}
	}
	if err := st.Room(need); err != nil {
		res.Abort()
		return nil, checkpointError(fmt.Errorf("%w (largest files to save: %s)", err, largest(entries, fetch, 3)))
	}
	if err := fetchFiles(ctx, client, res, entries, fetch, hashes); err != nil {
		res.Abort()
		if errors.Is(err, checkpoints.ErrOverCap) {
			// The cap holds on what is written: a file grew past what the scan listed.
			err = checkpointError(fmt.Errorf("%w (largest files to save, as read: %s)", err, largest(entries, fetch, 3)))
		}
		return nil, err
	}
	res.Fetched = len(fetch)
	step("fetch")
	err = res.buildTrees(entries, hashes)
	if err == nil {
		err = res.Build.Flush()
	}
	if err != nil {
		res.Abort()
		if errors.Is(err, checkpoints.ErrOverCap) {
			err = checkpointError(err)
		}
		return nil, err
	}
	step("trees")
	return res, nil
}

// largest names the n largest files among entries[fetch].
func largest(entries []wire.ScanEntry, fetch []int, n int) string {
	idx := slices.Clone(fetch)
	slices.SortFunc(idx, func(a, b int) int { return int(entries[b].Size - entries[a].Size) })
	var parts []string
	for _, i := range idx[:min(n, len(idx))] {
		parts = append(parts, fmt.Sprintf("%s %s", entries[i].Path.String(), checkpoints.FormatBytes(entries[i].Size)))
	}
	return strings.Join(parts, ", ")
}

// fetchInFlight is how many read requests a checkpoint keeps in flight,
// so that the agent reads, the channel carries and the store writes at
// once.
const fetchInFlight = 3

// fetchFiles reads the files entries[fetch] through the agent, small ones
// many to a request, large ones a chunk at a time, and stores each.
func fetchFiles(ctx context.Context, client *wire.Client, res *State, entries []wire.ScanEntry, fetch []int, hashes []string) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(fetchInFlight)
	var batch []int
	var batchBytes int64
	flush := func() {
		if len(batch) == 0 {
			return
		}
		mine := batch
		batch, batchBytes = nil, 0
		g.Go(func() error { return fetchBatch(ctx, client, res, entries, mine, hashes) })
	}
	for _, i := range fetch {
		if ctx.Err() != nil {
			break
		}
		size := entries[i].Size
		if size > wire.MaxChunkBytes/4 {
			g.Go(func() error { return fetchLarge(ctx, client, res, &entries[i], &hashes[i]) })
			continue
		}
		// A request carries the paths too: count them, a long one at most 4 KiB.
		cost := size + int64(len(entries[i].Path.String())) + 64
		if batchBytes+cost > wire.MaxChunkBytes || len(batch) == 4096 {
			flush()
		}
		batch = append(batch, i)
		batchBytes += cost
	}
	flush()
	return g.Wait()
}

// fetchBatch reads the small files entries[batch] in one request and
// stores each; one that changed since the scan is read again, alone.
func fetchBatch(ctx context.Context, client *wire.Client, res *State, entries []wire.ScanEntry, batch []int, hashes []string) error {
	ranges := make([]wire.FileRange, len(batch))
	for j, i := range batch {
		ranges[j] = wire.FileRange{Path: entries[i].Path, Limit: int(entries[i].Size)}
	}
	var out wire.ReadFilesResult
	if err := client.Call(ctx, wire.OpReadFiles, wire.ReadFilesArgs{Files: ranges}, &out); err != nil {
		return fmt.Errorf("reading files to save: %w", err)
	}
	for j, i := range batch {
		d := out.Files[j]
		if d.Error != "" || d.Changed || int64(len(d.Data)) != d.Size {
			if err := fetchLarge(ctx, client, res, &entries[i], &hashes[i]); err != nil {
				return err
			}
			continue
		}
		sum, err := res.Build.PutBlob(d.Data)
		if err != nil {
			return fmt.Errorf("saving %s: %w", entries[i].Path.String(), err)
		}
		hashes[i] = sum
		entries[i].Size = d.Size
		res.remember(entries[i].Path.String(), d, sum)
	}
	return nil
}

// fetchLarge reads one file a chunk at a time, from the start again when
// it changes in between, and stores it.
func fetchLarge(ctx context.Context, client *wire.Client, res *State, e *wire.ScanEntry, hash *string) error {
	p := e.Path.String()
	for try := 1; ; try++ {
		w, err := res.Build.NewBlob()
		if err != nil {
			return err
		}
		var first wire.FileData
		var offset int64
		changed := false
		for {
			var out wire.ReadFilesResult
			args := wire.ReadFilesArgs{Files: []wire.FileRange{{Path: e.Path, Offset: offset, Limit: wire.MaxChunkBytes}}}
			if err := client.Call(ctx, wire.OpReadFiles, args, &out); err != nil {
				w.Abort()
				return fmt.Errorf("reading %s to save it: %w", p, err)
			}
			d := out.Files[0]
			if d.Error != "" {
				w.Abort()
				return fmt.Errorf("reading %s to save it: %s; a checkpoint needs every file readable by the workspace user (chmod u+r)", p, d.Error)
			}
			if offset == 0 {
				first = d
			}
			changed = changed || d.Changed || d.Size != first.Size || d.Ctime != first.Ctime || d.Ino != first.Ino
			if _, err := w.Write(d.Data); err != nil {
				w.Abort()
				return grewError(p, e.Size, offset+int64(len(d.Data)), err)
			}
			offset += int64(len(d.Data))
			if len(d.Data) == 0 || offset >= d.Size {
				break
			}
		}
		if changed && try < fetchTries {
			w.Abort()
			continue
		}
		sum, err := w.Commit()
		if err != nil {
			return err
		}
		*hash, e.Size = sum, offset
		if !changed {
			res.remember(p, first, sum)
		}
		return nil
	}
}

// grewError names the file whose write to the store failed, and, when it
// grew past what the scan listed, says that a command is writing it.
func grewError(p string, listed, read int64, err error) error {
	if read <= listed {
		return fmt.Errorf("saving %s: %w", p, err)
	}
	return fmt.Errorf("saving %s, which grew from %s when it was listed to %s read while a command wrote it (let the command finish or stop it, job action=signal, then take the checkpoint): %w",
		p, checkpoints.FormatBytes(listed), checkpoints.FormatBytes(read), err)
}

// remember records a file read whole in the index, unless it changed too
// close to its read to be told apart from a later change.
func (r *State) remember(p string, d wire.FileData, sum string) {
	window := RacyWindow.Nanoseconds()
	if d.Ctime >= d.ReadUnixNanos-window || d.Mtime >= d.ReadUnixNanos-window {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Index[p] = checkpoints.Known{Stat: checkpoints.Stat{Size: d.Size, Mtime: d.Mtime, Ctime: d.Ctime, Ino: d.Ino}, Hash: sum}
}

// buildTrees stores the tree of every directory, deepest first, and sets
// the root. entries are in walk order, so a directory's entries all come
// after it.
func (r *State) buildTrees(entries []wire.ScanEntry, hashes []string) error {
	children := map[string][]checkpoints.Entry{"": nil}
	var dirs []string
	for i, e := range entries {
		p := e.Path.String()
		parent, name := path.Dir(p), path.Base(p)
		if !strings.Contains(p, "/") {
			parent = ""
		}
		ce := checkpoints.Entry{Name: name, Mode: e.Mode}
		switch e.Kind {
		case wire.KindFile:
			ce.Kind, ce.Size, ce.Hash = checkpoints.KindFile, e.Size, hashes[i]
			r.Files++
			r.Bytes += e.Size
		case wire.KindDirectory:
			ce.Kind = checkpoints.KindDir
			dirs = append(dirs, p)
			children[p] = children[p][:0:0]
			r.Dirs++
		case wire.KindSymlink:
			ce.Kind = checkpoints.KindSymlink
			if e.Target != nil {
				ce.Target = e.Target.String()
			}
			r.Symlinks++
		case wire.KindFifo:
			ce.Kind = checkpoints.KindFifo
			r.Fifos++
		default:
			continue
		}
		children[parent] = append(children[parent], ce)
	}
	treeOf := map[string]string{}
	for i := len(dirs) - 1; i >= -1; i-- {
		dir := ""
		if i >= 0 {
			dir = dirs[i]
		}
		list := children[dir]
		for j := range list {
			if list[j].Kind == checkpoints.KindDir {
				child := list[j].Name
				if dir != "" {
					child = dir + "/" + child
				}
				list[j].Hash = treeOf[child]
			}
		}
		sum, err := r.Build.PutTree(list)
		if err != nil {
			return err
		}
		treeOf[dir] = sum
	}
	r.Root = treeOf[""]
	return nil
}

// checkpointError names a checkpoint error for the model.
func checkpointError(err error) error {
	if errors.Is(err, checkpoints.ErrOverBudget) {
		return err // the quota's refusal names its own remedy
	}
	if errors.Is(err, checkpoints.ErrDiskFull) {
		return fmt.Errorf("%w; deleting checkpoints you no longer need (workspace_checkpoint_delete) frees space there too", err)
	}
	if errors.Is(err, checkpoints.ErrOverCap) {
		return fmt.Errorf("%w; delete checkpoints you no longer need (workspace_checkpoint_delete), or start the server with a larger --checkpoint-limit", err)
	}
	return err
}
