package checkpoint

import (
	"fmt"
	"strings"

	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/wire"
	"github.com/wink-mcp/wink-mcp/workspace/capture"
)

// treeEntry is one entry of a checkpoint, at its workspace path.
type treeEntry struct {
	path string
	checkpoints.Entry
}

// walkTree lists a checkpoint's entries in walk order: a directory, then
// its entries, names sorted bytewise, as the agent's scan lists them.
func walkTree(t *checkpoints.TreeFS) ([]treeEntry, error) {
	var out []treeEntry
	var walk func(dir string) error
	walk = func(dir string) error {
		name := dir
		if name == "" {
			name = "."
		}
		entries, err := t.Entries(name)
		if err != nil {
			return fmt.Errorf("reading the checkpoint: %w", err)
		}
		for _, e := range entries {
			p := joinPath(dir, e.Name)
			out = append(out, treeEntry{path: p, Entry: e})
			if e.Kind == checkpoints.KindDir {
				if err := walk(p); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return out, walk("")
}

func joinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// planStep is one step of a restore; a write names the blob to upload,
// its size, and the size of the file it replaces (-1 for none).
type planStep struct {
	wire.ApplyStep
	blob           string
	size, replaces int64
}

// restorePlan is what a restore will do.
type restorePlan struct {
	steps  []planStep
	counts restoreCounts
}

// kindOfScan is the checkpoint kind of a scanned entry, "" for those a
// checkpoint cannot hold (sockets, devices).
func kindOfScan(k string) string {
	switch k {
	case wire.KindFile:
		return checkpoints.KindFile
	case wire.KindDirectory:
		return checkpoints.KindDir
	case wire.KindSymlink:
		return checkpoints.KindSymlink
	case wire.KindFifo:
		return checkpoints.KindFifo
	}
	return ""
}

// planRestore works out the steps that turn current into target: first
// every directory becomes writable by its owner, so that what is inside
// can change; then what target lacks, or has as another kind, is removed;
// then what is missing or differs is made, in walk order; and last every
// directory gets its mode, deepest first. A file is rewritten unless the
// index knows its content is the target'r. With removeReplaced, the files
// to be rewritten are removed with the rest first, so that the disk never
// holds their old and new content at once (the journal and the automatic
// checkpoint, not the rename, keep a restore whole).
func planRestore(current []wire.ScanEntry, target []treeEntry, idx checkpoints.Index, removeReplaced bool) restorePlan {
	var p restorePlan
	want := make(map[string]checkpoints.Entry, len(target))
	for _, t := range target {
		want[t.path] = t.Entry
	}
	have := make(map[string]wire.ScanEntry, len(current))
	loosened := map[string]bool{}
	for _, c := range current {
		path := c.Path.String()
		have[path] = c
		if c.Kind == wire.KindDirectory && c.Mode&0o700 != 0o700 {
			p.step(wire.ApplyStep{Step: wire.StepChmod, Path: c.Path, Mode: c.Mode | 0o700})
			loosened[path] = true
		}
	}
	removed := map[string]bool{}
	for _, c := range current {
		path := c.Path.String()
		if underRemoved(path, removed) {
			continue
		}
		t, ok := want[path]
		same := ok && kindOfScan(c.Kind) == t.Kind && (t.Kind != checkpoints.KindSymlink || c.Target.String() == t.Target)
		if same && (!removeReplaced || t.Kind != checkpoints.KindFile || keeps(idx, path, t, c)) {
			continue
		}
		if same { // a file removed to be written again: counted as written
			p.step(wire.ApplyStep{Step: wire.StepRemove, Path: c.Path})
			removed[path] = true
			continue
		}
		p.step(wire.ApplyStep{Step: wire.StepRemove, Path: c.Path})
		removed[path] = true
		p.counts.Removed++
	}
	created := map[string]bool{}
	for _, t := range target {
		c, exists := have[t.path]
		exists = exists && !underRemoved(t.path, removed) && !removed[t.path]
		name := wire.NameOf(t.path)
		switch t.Kind {
		case checkpoints.KindDir:
			if !exists {
				p.step(wire.ApplyStep{Step: wire.StepMkdir, Path: name, Mode: 0o700})
				created[t.path] = true
				p.counts.Written++
			}
		case checkpoints.KindFile:
			if exists && keeps(idx, t.path, t.Entry, c) {
				if c.Mode != t.Mode {
					p.step(wire.ApplyStep{Step: wire.StepChmod, Path: name, Mode: t.Mode})
				}
				p.counts.Unchanged++
				continue
			}
			replaces := int64(-1)
			if exists {
				replaces = c.Size
			}
			p.steps = append(p.steps, planStep{ApplyStep: wire.ApplyStep{Step: wire.StepWrite, Path: name, Mode: t.Mode}, blob: t.Hash, size: t.Size, replaces: replaces})
			p.counts.Written++
		case checkpoints.KindSymlink:
			if exists {
				p.counts.Unchanged++
				continue
			}
			target := wire.NameOf(t.Target)
			p.step(wire.ApplyStep{Step: wire.StepSymlink, Path: name, Target: &target})
			p.counts.Written++
		case checkpoints.KindFifo:
			if exists {
				if c.Mode != t.Mode {
					p.step(wire.ApplyStep{Step: wire.StepChmod, Path: name, Mode: t.Mode})
				}
				p.counts.Unchanged++
				continue
			}
			p.step(wire.ApplyStep{Step: wire.StepFifo, Path: name, Mode: t.Mode})
			p.counts.Written++
		}
	}
	for i := len(target) - 1; i >= 0; i-- {
		t := target[i]
		if t.Kind != checkpoints.KindDir {
			continue
		}
		if c, ok := have[t.path]; created[t.path] || loosened[t.path] || !ok || c.Mode != t.Mode {
			p.step(wire.ApplyStep{Step: wire.StepChmod, Path: wire.NameOf(t.path), Mode: t.Mode})
		}
	}
	return p
}

func (p *restorePlan) step(s wire.ApplyStep) { p.steps = append(p.steps, planStep{ApplyStep: s}) }

// keeps reports whether the index knows that the file c at path already
// holds t's content.
func keeps(idx checkpoints.Index, path string, t checkpoints.Entry, c wire.ScanEntry) bool {
	k, ok := idx[path]
	return ok && k.Hash == t.Hash && k.Stat == capture.StatOf(c)
}

// underRemoved reports whether a directory above path was removed.
func underRemoved(path string, removed map[string]bool) bool {
	for i := strings.LastIndexByte(path, '/'); i > 0; i = strings.LastIndexByte(path[:i], '/') {
		if removed[path[:i]] {
			return true
		}
	}
	return false
}

// matches checks a scan of the workspace against a checkpoint: the same
// entries, in the same order, with the same kinds, modes, sizes and link
// targets.
func matches(after []wire.ScanEntry, target []treeEntry) error {
	for i := 0; i < len(after) || i < len(target); i++ {
		switch {
		case i >= len(after):
			return fmt.Errorf("%s is missing", target[i].path)
		case i >= len(target):
			return fmt.Errorf("%s should not be there", after[i].Path.String())
		}
		a, t := after[i], target[i]
		switch {
		case a.Path.String() != t.path:
			return fmt.Errorf("found %s where %s belongs", a.Path.String(), t.path)
		case kindOfScan(a.Kind) != t.Kind:
			return fmt.Errorf("%s is a %s, not a %s", t.path, a.Kind, t.Kind)
		case a.Mode != t.Mode:
			return fmt.Errorf("%s has mode %o, not %o", t.path, a.Mode, t.Mode)
		case t.Kind == checkpoints.KindFile && a.Size != t.Size:
			return fmt.Errorf("%s has %d bytes, not %d", t.path, a.Size, t.Size)
		case t.Kind == checkpoints.KindSymlink && (a.Target == nil || a.Target.String() != t.Target):
			return fmt.Errorf("%s does not link to %s", t.path, t.Target)
		}
	}
	return nil
}

// indexAfterRestore is the index of a workspace just restored to target:
// every file's content is the checkpoint's, and its state the scan's,
// except files changed within capture.RacyWindow of the scan, which are read again
// by the next checkpoint.
func indexAfterRestore(after []wire.ScanEntry, target []treeEntry, started int64) checkpoints.Index {
	idx := checkpoints.Index{}
	window := capture.RacyWindow.Nanoseconds()
	for i, a := range after {
		if a.Kind != wire.KindFile || a.Ctime >= started-window || a.Mtime >= started-window {
			continue
		}
		idx[a.Path.String()] = checkpoints.Known{Stat: capture.StatOf(a), Hash: target[i].Hash}
	}
	return idx
}
