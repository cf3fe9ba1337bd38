package changes

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"strings"
)

// counter counts what the groups of one listing hold, within MaxCounted
// entries in all.
type counter struct {
	ctx  context.Context
	left int
}

// countingTree is a tree that counts a directory faster than lstat by
// lstat: through directory descriptors.
type countingTree interface {
	count(n *counter, rel string, g *Group) error
}

// count adds to g what the directory at rel of t holds, below it too.
func (n *counter) count(t tree, rel string, g *Group) error {
	if ct, ok := t.(countingTree); ok {
		return ct.count(n, rel, g)
	}
	return n.slowCount(t, rel, g)
}

// add counts one entry, a directory being walked into but not counted in
// g; false when the budget is spent, which directories spend too, so that
// a tree of empty directories is bounded as well.
func (n *counter) add(info fs.FileInfo, g *Group) bool {
	if n.left <= 0 {
		g.Capped = true
		return false
	}
	n.left--
	if info.IsDir() {
		return true
	}
	g.Files++
	if info.Mode().IsRegular() || info.Mode()&fs.ModeSymlink != 0 {
		g.Bytes += info.Size()
	}
	return true
}

// errBudget stops a count whose budget is spent.
var errBudget = errors.New("count budget spent")

// slowCount counts through the tree interface: a listing and an lstat per entry.
func (n *counter) slowCount(t tree, rel string, g *Group) error {
	names, err := t.names(rel)
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := n.ctx.Err(); err != nil {
			return err
		}
		p := join(rel, name)
		info, err := t.lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // gone while being counted
		}
		if err != nil {
			return err
		}
		if !n.add(info, g) {
			return errBudget
		}
		if info.IsDir() {
			if err := n.slowCount(t, p, g); err != nil {
				return err
			}
		}
	}
	return nil
}

// count counts the directory at rel through descriptors: one read of each
// directory's entries, each described by fstatat without following it.
func (d *dirTree) count(n *counter, rel string, g *Group) error {
	return d.eachEntry(n.ctx, rel, func(entry string, info fs.FileInfo) error {
		if !n.add(info, g) {
			return errBudget
		}
		if info.IsDir() {
			return d.count(n, join(rel, entry), g)
		}
		return nil
	})
}

// eachEntry calls f with the name and description of each entry of the
// directory at rel, read a batch at a time through its descriptor (an
// os.Root's directory describes its entries with fstatat, never following
// a link). An entry gone before it is described is skipped.
func (d *dirTree) eachEntry(ctx context.Context, rel string, f func(name string, info fs.FileInfo) error) error {
	dir, err := d.openSame(rel, fs.ModeDir)
	if err != nil {
		return err
	}
	defer dir.Close()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		entries, err := dir.ReadDir(256)
		for _, e := range entries {
			info, ierr := e.Info()
			if errors.Is(ierr, fs.ErrNotExist) {
				continue
			}
			if ierr != nil {
				return ierr
			}
			if ferr := f(e.Name(), info); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) || (err == nil && len(entries) == 0) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// count counts the directory at rel as the merged view shows it; one only
// in the upper layer is read through descriptors.
func (o *overlayTree) count(n *counter, rel string, g *Group) error {
	p, err := o.locate(rel)
	if err != nil {
		return err
	}
	if p.inLower || !p.inUpper {
		return n.slowCount(o, rel, g)
	}
	return o.countUpper(n, rel, g)
}

// countUpper counts a directory only the upper layer has: its entries are
// the session's, less the overlay's own markers, and only a redirected
// subdirectory (a lower directory renamed) has lower entries to merge.
func (o *overlayTree) countUpper(n *counter, rel string, g *Group) error {
	return o.upper.eachEntry(n.ctx, rel, func(entry string, info fs.FileInfo) error {
		p := join(rel, entry)
		if isWhiteout(info) || (o.markers.whiteoutFiles() && strings.HasPrefix(entry, whiteoutPrefix)) {
			return nil
		}
		if !n.add(info, g) {
			return errBudget
		}
		if !info.IsDir() {
			return nil
		}
		redirect, err := o.upperAttr(p, o.attrs.redirect)
		if err != nil {
			return err
		}
		if redirect != nil {
			return n.slowCount(o, p, g)
		}
		return o.countUpper(n, p, g)
	})
}
