package changes

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/aymanbagabas/go-udiff"
)

// zeroHash is git's name for "no object" on one side of a patch.
const zeroHash = "0000000000000000000000000000000000000000"

// contextLines is the unchanged lines shown around each hunk, as git does.
const contextLines = 3

// PatchOptions say how a patch shows file contents.
type PatchOptions struct {
	// TextLimit is the largest file shown as a text diff. Larger files, and
	// files with NUL bytes or invalid UTF-8, are binary.
	TextLimit int64
	// Binary embeds binary files as git binary patches, so that the patch
	// reproduces them; without it they are listed as "Binary files ... differ".
	Binary bool
	// Prefix is put before every path, such as the folder's place in the
	// workspace ("project/"); "" gives paths relative to the folder.
	Prefix string
	// DeferLeftOut leaves the lines naming what the patch leaves out to
	// the caller (WriteLeftOut), which can then write several folders'
	// changes before any of them.
	DeferLeftOut bool
}

// WritePatch writes changes, as Changes returned them, as a git patch that
// `git apply` accepts in a clean copy of the host folder, and returns what
// it left out, one line each. What git cannot hold (fifos, sockets,
// devices), files over ReadLimit, .git and new files the host folder
// ignores are named in comment lines git ignores, after every change the
// patch holds; a Group is one line.
// An entry that changed since Changes saw it is written as it is now. It
// stops, with ctx's error, when ctx is done.
func (f *Folder) WritePatch(ctx context.Context, w io.Writer, changes []Change, opts PatchOptions) ([]string, error) {
	bw := bufio.NewWriter(w)
	var left []string
	leave := func(format string, args ...any) {
		left = append(left, fmt.Sprintf(format, args...))
	}
	for _, c := range changes {
		if err := ctx.Err(); err != nil {
			return left, err
		}
		err := f.writeChange(ctx, bw, c, opts, leave)
		if transient(err) {
			fresh := f.comparison(ctx)
			if err = fresh.compare(c.Path); err == nil {
				for _, now := range f.classify(fresh.out) {
					if err = f.writeChange(ctx, bw, now, opts, leave); err != nil {
						break
					}
				}
			}
			if transient(err) {
				leave("%s kept changing while the patch was written; diff again", opts.Prefix+c.Path)
				err = nil
			}
		}
		if err != nil {
			return left, err
		}
	}
	if !opts.DeferLeftOut {
		if err := WriteLeftOut(bw, left); err != nil {
			return left, err
		}
	}
	return left, bw.Flush()
}

// WriteLeftOut writes the lines WritePatch returned as comments git ignores.
func WriteLeftOut(w io.Writer, left []string) error {
	for _, line := range left {
		if _, err := fmt.Fprintf(w, "# not in this patch: %s\n", line); err != nil {
			return err
		}
	}
	return nil
}

// writeChange writes the patch of one change.
func (f *Folder) writeChange(ctx context.Context, bw *bufio.Writer, c Change, opts PatchOptions, leave func(string, ...any)) error {
	old, cur := c.Old, c.New
	if why := c.LeftOut(); why != "" {
		if c.Group != nil {
			leave("%s (%s): %s", dirName(opts.Prefix+c.Path), c.Group.describe(c.Ignored != ""), why)
		} else {
			leave("%s (%s): %s", opts.Prefix+c.Path, c.Status(), why)
		}
		return nil
	}
	if old != nil && old.Kind == KindOther {
		leave("%s was a fifo, socket or device", opts.Prefix+c.Path)
		old = nil
	}
	if cur != nil && cur.Kind == KindOther {
		leave("%s is a fifo, socket or device", opts.Prefix+c.Path)
		cur = nil
	}
	switch {
	case old == nil && cur == nil:
		return nil
	case old != nil && cur != nil && old.Kind != cur.Kind:
		// git writes a type change as a deletion and a creation.
		if err := f.section(ctx, bw, c.Path, old, nil, opts); err != nil {
			return err
		}
		return f.section(ctx, bw, c.Path, nil, cur, opts)
	}
	return f.section(ctx, bw, c.Path, old, cur, opts)
}

// side is one side of a file's patch section.
type side struct {
	entry *Entry
	data  []byte // the content, when it is text
	text  bool
	hash  string
}

// load reads one side's content, as text when it qualifies.
func load(ctx context.Context, t tree, rel string, e *Entry, opts PatchOptions) (side, error) {
	s := side{entry: e, text: true, hash: zeroHash}
	if e == nil {
		return s, nil
	}
	info, err := t.lstat(rel)
	if err != nil {
		return s, err
	}
	if info.Size() > opts.TextLimit {
		s.text = false
		s.hash, err = streamHash(ctx, t, rel, info.Size())
		return s, err
	}
	s.data, err = content(t, rel, info, opts.TextLimit)
	if err != nil {
		return s, err
	}
	s.text = utf8.Valid(s.data) && bytes.IndexByte(s.data, 0) < 0
	s.hash = blobHash(s.data)
	return s, nil
}

// section writes the patch of one path between two entries of the same
// kind, either of which may be absent.
func (f *Folder) section(ctx context.Context, w *bufio.Writer, rel string, old, cur *Entry, opts PatchOptions) error {
	a, err := load(ctx, f.base, rel, old, opts)
	if err != nil {
		return err
	}
	b, err := load(ctx, f.current, rel, cur, opts)
	if err != nil {
		return err
	}
	aName, bName := quotePath("a/"+opts.Prefix+rel), quotePath("b/"+opts.Prefix+rel)
	fmt.Fprintf(w, "diff --git %s %s\n", aName, bName)
	switch {
	case old == nil:
		fmt.Fprintf(w, "new file mode %s\n", cur.gitMode())
		aName = "/dev/null"
	case cur == nil:
		fmt.Fprintf(w, "deleted file mode %s\n", old.gitMode())
		bName = "/dev/null"
	case old.gitMode() != cur.gitMode():
		fmt.Fprintf(w, "old mode %s\nnew mode %s\n", old.gitMode(), cur.gitMode())
	}
	if a.hash == b.hash {
		return nil
	}
	fmt.Fprintf(w, "index %s..%s", a.hash, b.hash)
	if old != nil && cur != nil && old.gitMode() == cur.gitMode() {
		fmt.Fprintf(w, " %s", old.gitMode())
	}
	w.WriteString("\n")
	if a.text && b.text {
		diff, err := udiff.ToUnified(label(aName), label(bName), string(a.data), udiff.Lines(string(a.data), string(b.data)), contextLines)
		if err != nil {
			return fmt.Errorf("diffing %s: %w", rel, err)
		}
		_, err = w.WriteString(diff)
		return err
	}
	if !opts.Binary {
		_, err := fmt.Fprintf(w, "Binary files %s and %s differ\n", aName, bName)
		return err
	}
	w.WriteString("GIT binary patch\n")
	if cur == nil {
		return writeLiteral(w, bytes.NewReader(nil), 0)
	}
	if b.data != nil || cur.Size == 0 {
		return writeLiteral(w, bytes.NewReader(b.data), int64(len(b.data)))
	}
	r, err := f.current.open(rel)
	if err != nil {
		return err
	}
	defer r.Close()
	info, err := f.current.lstat(rel)
	if err != nil {
		return err
	}
	return writeLiteral(w, ctxReader{ctx, r}, info.Size())
}

// label is a file name on a ---/+++ line: git ends one that holds a space with a tab.
func label(name string) string {
	if strings.Contains(name, " ") {
		return name + "\t"
	}
	return name
}

// blobHash is git's object name for a blob of data.
func blobHash(data []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// streamHash is blobHash of a regular file too large to hold.
func streamHash(ctx context.Context, t tree, rel string, size int64) (string, error) {
	r, err := t.open(rel)
	if err != nil {
		return "", err
	}
	defer r.Close()
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", size)
	n, err := io.Copy(h, ctxReader{ctx, r})
	if err != nil {
		return "", err
	}
	if n != size {
		return "", fmt.Errorf("%s: %w (its size)", rel, errChanged)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
