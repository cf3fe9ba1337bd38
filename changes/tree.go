// Package changes finds what a session changed in a folder it was given, and
// writes those changes as a git patch. It reads the host copy of the folder
// and the session's files (an overlay's upper directory, or a copied tree)
// without ever following a symlink: a link the model planted is reported as a
// link, and its target is never opened.
package changes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"syscall"
)

// tree is a read-only directory tree addressed by slash-separated paths
// relative to its root ("" is the root). No method follows a symlink.
type tree interface {
	// lstat describes the entry at rel; a missing entry is fs.ErrNotExist.
	lstat(rel string) (fs.FileInfo, error)
	// names lists the entries of the directory at rel, sorted.
	names(rel string) ([]string, error)
	// open opens the regular file at rel; the caller closes it.
	open(rel string) (io.ReadCloser, error)
	// readlink returns the target of the symlink at rel.
	readlink(rel string) (string, error)
}

// content returns what git records for the entry described by info at rel:
// a regular file's bytes or a symlink's target, refusing more than limit bytes.
func content(t tree, rel string, info fs.FileInfo, limit int64) ([]byte, error) {
	if info.Mode()&fs.ModeSymlink != 0 {
		target, err := t.readlink(rel)
		return []byte(target), err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", rel)
	}
	if info.Size() > limit {
		return nil, fmt.Errorf("%s: %w (%d bytes; the limit is %d)", rel, ErrTooLarge, info.Size(), limit)
	}
	f, err := t.open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(data)) > limit {
		err = fmt.Errorf("%s: %w (it grew past %d bytes)", rel, errChanged, limit)
	}
	return data, err
}

// ErrTooLarge is wrapped when a file is above the size a caller can hold.
var ErrTooLarge = errors.New("file too large")

// ReadLimit is the largest file, by apparent size, whose content the change
// readers ever read: a session can make a file of any apparent size that
// takes no space (truncate -s 200G), and reading its holes would take
// minutes. Larger files are listed, never read.
const ReadLimit = 256 << 20

// errChanged is wrapped when an entry is replaced while it is being read;
// the readers look at it again rather than fail.
var errChanged = errors.New("changed while being read")

// transient reports whether err means the entry changed or vanished while
// being read, so that it should be looked at again as it is now.
func transient(err error) bool {
	return errors.Is(err, errChanged) || errors.Is(err, fs.ErrNotExist)
}

// ctxReader stops reading once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// dirTree is a directory on the host, read through an os.Root so that no
// path, however its components are swapped for symlinks, leads out of it.
type dirTree struct {
	root *os.Root
}

// openDir opens the directory at dir as a tree. The caller closes it.
func openDir(dir string) (*dirTree, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &dirTree{root: root}, nil
}

// close releases the tree's directory.
func (d *dirTree) close() error { return d.root.Close() }

func name(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}

func (d *dirTree) lstat(rel string) (fs.FileInfo, error) { return d.root.Lstat(name(rel)) }

func (d *dirTree) names(rel string) ([]string, error) {
	f, err := d.openSame(rel, fs.ModeDir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	list, err := f.Readdirnames(-1)
	slices.Sort(list)
	return list, err
}

func (d *dirTree) open(rel string) (io.ReadCloser, error) { return d.openSame(rel, 0) }

func (d *dirTree) readlink(rel string) (string, error) { return d.root.Readlink(name(rel)) }

// xattr reads an extended attribute of the entry at rel, "" when it has none.
// Only directories and regular files are opened; other entries have none here.
func (d *dirTree) xattr(rel, attr string) (string, error) {
	info, err := d.lstat(rel)
	if err != nil || !(info.IsDir() || info.Mode().IsRegular()) {
		return "", err
	}
	f, err := d.openSame(rel, info.Mode().Type())
	if err != nil {
		return "", err
	}
	defer f.Close()
	buf := make([]byte, 4096)
	n, err := fgetxattr(f, attr, buf)
	if errors.Is(err, syscall.ENODATA) || errors.Is(err, syscall.ENOTSUP) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading %s of %s: %w", attr, rel, err)
	}
	return string(buf[:n]), nil
}

// openSame opens the entry at rel without blocking (a fifo swapped in does
// not hang the read) and checks that what was opened is what lstat sees now
// and has the type want: os.Root follows a symlink inside the root, so a
// link swapped in for the entry is caught here rather than read through.
func (d *dirTree) openSame(rel string, want fs.FileMode) (*os.File, error) {
	before, err := d.lstat(rel)
	if err != nil {
		return nil, err
	}
	if before.Mode().Type() != want {
		return nil, fmt.Errorf("%s: %w (its type)", rel, errChanged)
	}
	f, err := d.root.OpenFile(name(rel), os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	opened, err := f.Stat()
	if err != nil || !os.SameFile(before, opened) {
		f.Close()
		return nil, fmt.Errorf("%s: %w (replaced)", rel, errChanged)
	}
	return f, nil
}

// join joins a tree path and a name.
func join(rel, name string) string {
	if rel == "" {
		return name
	}
	return path.Join(rel, name)
}
