package changes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
)

// Kind is what an entry is, as git sees it.
type Kind string

// Kinds of entries.
const (
	KindFile    Kind = "file"
	KindSymlink Kind = "symlink"
	// KindOther is a fifo, socket or device: reported, but git cannot hold it.
	KindOther Kind = "other"
)

// Status says how a path changed.
type Status string

// Statuses of a change.
const (
	Created  Status = "created"
	Modified Status = "modified"
	Deleted  Status = "deleted"
)

// Entry is one side of a change.
type Entry struct {
	Kind       Kind
	Executable bool
	// Size is the apparent size; Allocated what the file takes on disk,
	// less than Size for a sparse file.
	Size, Allocated int64
}

// tooLarge reports whether the entry is a file the readers will not read.
func (e *Entry) tooLarge() bool { return e != nil && e.Kind == KindFile && e.Size > ReadLimit }

// gitMode is the mode git records for the entry.
func (e *Entry) gitMode() string {
	switch {
	case e.Kind == KindSymlink:
		return "120000"
	case e.Executable:
		return "100755"
	}
	return "100644"
}

// Change is one path whose entry differs between the folder and the session.
// Directories are not changes: git holds files and symlinks, and a
// directory's changes are those of the files under it.
type Change struct {
	// Path is slash-separated, relative to the folder.
	Path string
	// Old is the folder's entry, nil if the session created the path.
	Old *Entry
	// New is the session's entry, nil if the session deleted the path.
	New *Entry
	// Ignored names the host folder's ignore rule that matches the paths
	// of a Group the session created ("sub/.gitignore:3: *.pyc"), unless
	// the folder includes ignored files.
	Ignored string
	// Group, when set, makes the change stand for many paths under Path
	// that a patch leaves out, counted rather than listed.
	Group *Group
}

// LeftOut says why a patch leaves the change out, "" when it holds it:
// anything under .git (git's own files: a patch touching them does not
// apply), files over ReadLimit, which are never read, and new files the
// host folder's .gitignore rules ignore.
func (c Change) LeftOut() string {
	if underGit(c.Path) {
		return "under .git, git's own files, which a patch never changes"
	}
	for _, e := range []*Entry{c.New, c.Old} {
		if e.tooLarge() {
			return fmt.Sprintf("%d bytes (%d on disk), over the %d bytes a patch reads; copy it out with podman_shell if you need it", e.Size, e.Allocated, ReadLimit)
		}
	}
	if c.Ignored != "" {
		return "new, and ignored by the folder's " + c.Ignored + " (start the server with --export-ignored to put such files in patches)"
	}
	return ""
}

// Status says whether the change created, modified or deleted its path.
func (c Change) Status() Status {
	switch {
	case c.Old == nil:
		return Created
	case c.New == nil:
		return Deleted
	}
	return Modified
}

// comparison walks two trees side by side.
type comparison struct {
	ctx           context.Context
	base, current tree
	// candidates lists the names in the directory at rel, present in both
	// trees, that may differ.
	candidates func(rel string) ([]string, error)
	// wholeDir says whether a directory only the current tree has is
	// counted as one group instead of walked, and the rule ignoring it.
	wholeDir func(rel string) (rule string, ok bool)
	counter  *counter
	out      []Change
}

// walk compares the directory at rel, present in both trees.
func (c *comparison) walk(rel string) error {
	names, err := c.candidates(rel)
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := c.compare(join(rel, n)); err != nil {
			return err
		}
	}
	return nil
}

// compare compares the entries at rel as they are now: an entry replaced or
// removed while it is being read is looked at again, a few times, and one
// that keeps changing is left out rather than failing the whole walk.
func (c *comparison) compare(rel string) error {
	for range 3 {
		if err := c.ctx.Err(); err != nil {
			return err
		}
		mark := len(c.out)
		err := c.compareOnce(rel)
		if !transient(err) {
			return err
		}
		c.out = c.out[:mark]
	}
	return nil
}

// compareOnce compares the entries at rel.
func (c *comparison) compareOnce(rel string) error {
	old, err := lstatMaybe(c.base, rel)
	if err != nil {
		return err
	}
	cur, err := lstatMaybe(c.current, rel)
	if err != nil {
		return err
	}
	oldDir, curDir := old != nil && old.IsDir(), cur != nil && cur.IsDir()
	switch {
	case oldDir && curDir:
		return c.walk(rel)
	case oldDir:
		if err := c.all(c.base, rel, true); err != nil {
			return err
		}
		if cur != nil {
			c.out = append(c.out, Change{Path: rel, New: entryOf(cur)})
		}
		return nil
	case curDir:
		if old != nil {
			c.out = append(c.out, Change{Path: rel, Old: entryOf(old)})
		}
		if rule, ok := c.wholeDir(rel); ok {
			return c.group(rel, rule)
		}
		return c.all(c.current, rel, false)
	case old == nil && cur == nil:
		return nil
	case old == nil:
		c.out = append(c.out, Change{Path: rel, New: entryOf(cur)})
		return nil
	case cur == nil:
		c.out = append(c.out, Change{Path: rel, Old: entryOf(old)})
		return nil
	}
	same, err := c.same(rel, old, cur)
	if err != nil {
		return err
	}
	if !same {
		c.out = append(c.out, Change{Path: rel, Old: entryOf(old), New: entryOf(cur)})
	}
	return nil
}

// all records every entry under the directory at rel of t as deleted (from
// the base) or created (in the current tree).
func (c *comparison) all(t tree, rel string, deleted bool) error {
	names, err := t.names(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // gone while being listed
	}
	if err != nil {
		return err
	}
	for _, n := range names {
		p := join(rel, n)
		info, err := t.lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if info.IsDir() {
			if rule, ok := c.wholeDir(p); ok && !deleted {
				err = c.group(p, rule)
			} else {
				err = c.all(t, p, deleted)
			}
			if err != nil {
				return err
			}
			continue
		}
		if deleted {
			c.out = append(c.out, Change{Path: p, Old: entryOf(info)})
		} else {
			c.out = append(c.out, Change{Path: p, New: entryOf(info)})
		}
	}
	return nil
}

// same reports whether two entries that are not directories are the same
// to git: the same kind, executable bit and content.
func (c *comparison) same(rel string, old, cur fs.FileInfo) (bool, error) {
	a, b := entryOf(old), entryOf(cur)
	if a.Kind != b.Kind || a.Executable != b.Executable || a.Size != b.Size {
		return false, nil
	}
	switch a.Kind {
	case KindSymlink:
		x, err := c.base.readlink(rel)
		if err != nil {
			return false, err
		}
		y, err := c.current.readlink(rel)
		return x == y, err
	case KindFile:
		if a.tooLarge() {
			// Not read: a file the session rewrote counts as changed.
			return false, nil
		}
		return sameContent(c.ctx, c.base, c.current, rel)
	}
	return true, nil
}

// sameContent compares two regular files chunk by chunk.
func sameContent(ctx context.Context, base, current tree, rel string) (bool, error) {
	x, err := base.open(rel)
	if err != nil {
		return false, err
	}
	defer x.Close()
	y, err := current.open(rel)
	if err != nil {
		return false, err
	}
	defer y.Close()
	bx, by := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		nx, errx := io.ReadFull(ctxReader{ctx, x}, bx)
		ny, erry := io.ReadFull(ctxReader{ctx, y}, by)
		if !bytes.Equal(bx[:nx], by[:ny]) {
			return false, nil
		}
		endx := errors.Is(errx, io.EOF) || errors.Is(errx, io.ErrUnexpectedEOF)
		endy := errors.Is(erry, io.EOF) || errors.Is(erry, io.ErrUnexpectedEOF)
		switch {
		case endx && endy:
			return true, nil
		case endx != endy:
			return false, nil
		case errx != nil:
			return false, errx
		case erry != nil:
			return false, erry
		}
	}
}

// lstatMaybe is lstat with a missing entry as nil.
func lstatMaybe(t tree, rel string) (fs.FileInfo, error) {
	info, err := t.lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	return info, nil
}

func entryOf(info fs.FileInfo) *Entry {
	e := &Entry{Kind: KindOther, Size: info.Size(), Allocated: info.Size()}
	if n, ok := allocated(info); ok {
		e.Allocated = n
	}
	switch {
	case info.Mode().IsRegular():
		e.Kind, e.Executable = KindFile, info.Mode()&0o100 != 0
	case info.Mode()&fs.ModeSymlink != 0:
		e.Kind = KindSymlink
	default:
		e.Size, e.Allocated = 0, 0
	}
	return e
}
