//go:build linux

package agent

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/wink-mcp/wink-mcp/wire"
)

// fileOps are the file tools' operations on the workspace (read, write,
// edit, rm, ls, glob, grep), confined to its root. It is safe for
// concurrent use: every change holds the agent's mutation lock.
type fileOps struct {
	root      *os.Root
	mutations *mutations
	// watch is told which changes are the tools' own.
	watch *watcher
}

// rel turns a normalised workspace path into the name os.Root expects.
func rel(p string) string {
	if p == "" {
		return "."
	}
	return p
}

// kindOf names the kind of a file mode.
func kindOf(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return wire.KindFile
	case m.IsDir():
		return wire.KindDirectory
	case m&fs.ModeSymlink != 0:
		return wire.KindSymlink
	}
	return wire.KindOther
}

// openRegular opens a regular file for reading. It opens without blocking
// (a fifo swapped in after a check cannot hang the agent) and checks the
// opened file itself, so nothing but a regular file is ever read.
func (ops *fileOps) openRegular(p string) (*os.File, fs.FileInfo, *wire.Error) {
	f, err := ops.root.OpenFile(rel(p), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, pathError(p, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, pathError(p, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		if fi.IsDir() {
			return nil, nil, wire.Errorf(wire.CodeInvalid, "%q is a directory; list it with ls", p)
		}
		return nil, nil, wire.Errorf(wire.CodeInvalid, "%q is not a regular file (%s); the file tools never open special files", p, kindName(fi.Mode()))
	}
	return f, fi, nil
}

func kindName(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a fifo"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}

// readText loads a regular file of at most wire.MaxFileBytes that is UTF-8 text.
func (ops *fileOps) readText(p string) (string, *wire.Error) {
	text, _, werr := ops.readTextInfo(p)
	return text, werr
}

// readTextInfo is readText that also describes the file it read, so that a
// change can check the file is still that one before replacing it.
func (ops *fileOps) readTextInfo(p string) (string, fs.FileInfo, *wire.Error) {
	f, fi, werr := ops.openRegular(p)
	if werr != nil {
		return "", nil, werr
	}
	defer f.Close()
	if fi.Size() > wire.MaxFileBytes {
		return "", nil, wire.Errorf(wire.CodeInvalid, "%q is %d bytes; the file tools load files of up to %d bytes; use podman_shell (head, tail, sed -n) for larger ones", p, fi.Size(), wire.MaxFileBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, wire.MaxFileBytes+1))
	if err != nil {
		return "", nil, pathError(p, err)
	}
	if len(data) > wire.MaxFileBytes {
		return "", nil, wire.Errorf(wire.CodeInvalid, "%q grew past %d bytes while being read", p, wire.MaxFileBytes)
	}
	if !utf8.Valid(data) {
		return "", nil, wire.Errorf(wire.CodeInvalid, "%q is not UTF-8 text (a binary file of %d bytes); read its exact bytes with read_file encoding=base64, or inspect it with podman_shell, e.g. [\"od\", \"-c\", %q]", p, len(data), p)
	}
	return string(data), fi, nil
}

// writable checks that p may be replaced by a write: it is missing or a
// regular file. It returns the mode to keep and whether p exists.
func (ops *fileOps) writable(p string) (fs.FileMode, bool, *wire.Error) {
	fi, err := ops.root.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0o644, false, nil
	case err != nil:
		return 0, false, pathError(p, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		target, _ := ops.root.Readlink(p)
		return 0, false, wire.Errorf(wire.CodeInvalid, "%q is a symbolic link (to %q); the file tools write files, not links: write to the link's target instead", p, target)
	case fi.IsDir():
		return 0, false, wire.Errorf(wire.CodeInvalid, "%q is a directory", p)
	case !fi.Mode().IsRegular():
		return 0, false, wire.Errorf(wire.CodeInvalid, "%q is not a regular file (%s); the file tools never open special files", p, kindName(fi.Mode()))
	}
	return fi.Mode().Perm(), true, nil
}

// makeParents creates the directories above p.
func (ops *fileOps) makeParents(p string) *wire.Error {
	dir := path.Dir(p)
	if dir == "." {
		return nil
	}
	err := ops.root.MkdirAll(dir, 0o755)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrExist), errors.Is(err, syscall.ENOTDIR):
		return wire.Errorf(wire.CodeInvalid, "a parent of %q is a file, not a directory", p)
	}
	return pathError(dir, err)
}

// replaceFile writes data to p atomically: a temporary file in the same
// directory, then a rename over p. On any failure p is left as it was and
// the temporary file is removed. With read set, p must still be the file
// read describes (a command may have changed it since it was read); if it
// is not, nothing is written and the error says so.
func (ops *fileOps) replaceFile(p string, data []byte, perm fs.FileMode, read fs.FileInfo) *wire.Error {
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	dir, base := path.Split(p)
	tmp := dir + ".wink-" + truncate(base, 64) + "." + hex.EncodeToString(suffix[:]) + ".tmp"
	f, err := ops.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return pathError(p, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm) // exact mode, whatever the umask
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && read != nil {
		if werr := ops.unchangedSince(p, read); werr != nil {
			_ = ops.root.Remove(tmp)
			return werr
		}
	}
	if err == nil {
		err = ops.root.Rename(tmp, p)
	}
	if err != nil {
		_ = ops.root.Remove(tmp)
		return pathError(p, err)
	}
	return nil
}

// unchangedSince checks that p is still the file read describes: the same
// inode, size and modification time. Tool changes are serialised, so only a
// command can have changed it.
func (ops *fileOps) unchangedSince(p string, read fs.FileInfo) *wire.Error {
	now, err := ops.root.Lstat(p)
	if err == nil && os.SameFile(now, read) && now.Size() == read.Size() && now.ModTime().Equal(read.ModTime()) {
		return nil
	}
	return wire.Errorf(wire.CodeConflict, "%q changed while it was being edited (a command wrote, replaced or removed it); nothing was written: read it again and redo the edit", p)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// read answers OpRead.
func (ops *fileOps) read(args wire.ReadArgs) (*wire.ReadResult, *wire.Error) {
	text, werr := ops.readText(args.Path)
	if werr != nil {
		return nil, werr
	}
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	total := len(lines)
	if args.Whole {
		return &wire.ReadResult{Path: args.Path, Content: text, Limit: total, TotalLines: total}, nil
	}
	if args.Offset > total || (args.Offset == total && total > 0) {
		return nil, wire.Errorf(wire.CodeInvalid, "offset %d is past the end of %q, which has %d lines (offsets start at 0)", args.Offset, args.Path, total)
	}
	end := min(args.Offset+args.Limit, total)
	var b strings.Builder
	cut := 0
	for _, line := range lines[args.Offset:end] {
		body, ending := splitEnding(line)
		body, wasCut := wire.CutLine(body)
		if wasCut {
			cut++
		}
		b.WriteString(body)
		b.WriteString(ending)
	}
	return &wire.ReadResult{
		Path: args.Path, Content: b.String(), Offset: args.Offset, Limit: end - args.Offset,
		TotalLines: total, LinesCut: cut, Truncated: end < total || cut > 0,
	}, nil
}

// readBytes answers OpReadBytes: bytes of any regular file, text or not.
func (ops *fileOps) readBytes(args wire.ReadBytesArgs) (*wire.ReadBytesResult, *wire.Error) {
	if args.Offset < 0 || args.Limit <= 0 || args.Limit > wire.MaxBinaryBytes {
		return nil, wire.Errorf(wire.CodeBadRequest, "offset must not be negative and limit must be 1 to %d", wire.MaxBinaryBytes)
	}
	f, fi, werr := ops.openRegular(args.Path)
	if werr != nil {
		return nil, werr
	}
	defer f.Close()
	size := fi.Size()
	if args.Offset > size {
		return nil, wire.Errorf(wire.CodeInvalid, "byte_offset %d is past the end of %q, which has %d bytes", args.Offset, args.Path, size)
	}
	buf := make([]byte, min(int64(args.Limit), size-args.Offset))
	n, err := f.ReadAt(buf, args.Offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, pathError(args.Path, err)
	}
	return &wire.ReadBytesResult{Path: args.Path, Data: buf[:n], Offset: args.Offset, SizeBytes: size}, nil
}

// splitEnding separates a line from its "\n" or "\r\n".
func splitEnding(line string) (string, string) {
	if body, ok := strings.CutSuffix(line, "\r\n"); ok {
		return body, "\r\n"
	}
	if body, ok := strings.CutSuffix(line, "\n"); ok {
		return body, "\n"
	}
	return line, ""
}

// write answers OpWrite.
func (ops *fileOps) write(args wire.WriteArgs) (*wire.WriteResult, *wire.Error) {
	if args.Path == "" {
		return nil, wire.Errorf(wire.CodeInvalid, "the path names the workspace root, not a file")
	}
	content := []byte(args.Content)
	switch {
	case args.Binary && len(args.Data) > wire.MaxBinaryBytes:
		return nil, wire.Errorf(wire.CodeInvalid, "content is %d bytes; the limit of a binary write is %d", len(args.Data), wire.MaxBinaryBytes)
	case args.Binary:
		content = args.Data
	case utf8.RuneCountInString(args.Content) > wire.MaxFileChars:
		return nil, wire.Errorf(wire.CodeInvalid, "content is %d characters; the limit is %d", utf8.RuneCountInString(args.Content), wire.MaxFileChars)
	}
	seq, done := ops.mutations.begin()
	defer done()
	made := false
	defer func() { ops.watch.own(made, args.Path) }()
	if werr := ops.makeParents(args.Path); werr != nil {
		return nil, werr
	}
	perm, exists, werr := ops.writable(args.Path)
	if werr != nil {
		return nil, werr
	}
	if werr := ops.replaceFile(args.Path, content, perm, nil); werr != nil {
		return nil, werr
	}
	made = true
	return &wire.WriteResult{Path: args.Path, SizeBytes: int64(len(content)), Created: !exists, Seq: seq}, nil
}

// edit answers OpEdit.
func (ops *fileOps) edit(args wire.EditArgs) (*wire.EditResult, *wire.Error) {
	switch {
	case args.Old == "":
		return nil, wire.Errorf(wire.CodeInvalid, "old_string is empty; to create or replace a whole file use write_file")
	case args.Old == args.New:
		return nil, wire.Errorf(wire.CodeInvalid, "old_string and new_string are the same; nothing would change")
	}
	seq, done := ops.mutations.begin()
	defer done()
	made := false
	defer func() { ops.watch.own(made, args.Path) }()
	perm, exists, werr := ops.writable(args.Path)
	if werr != nil {
		return nil, werr
	}
	if !exists {
		return nil, wire.Errorf(wire.CodeNotFound, "%q does not exist in /workspace; create it with write_file", args.Path)
	}
	text, read, werr := ops.readTextInfo(args.Path)
	if werr != nil {
		return nil, werr
	}
	old, repl := args.Old, args.New
	n := strings.Count(text, old)
	if n == 0 && strings.Contains(text, "\r\n") {
		// The file uses CRLF and the model wrote LF: match and write CRLF.
		if crlfOld := toCRLF(old); crlfOld != old {
			if c := strings.Count(text, crlfOld); c > 0 {
				old, repl, n = crlfOld, toCRLF(repl), c
			}
		}
	}
	switch {
	case n == 0:
		return nil, wire.Errorf(wire.CodeNotFound, "old_string was not found in %q; read the file again and copy the text exactly, whitespace and indentation included", args.Path)
	case n > 1 && !args.ReplaceAll:
		return nil, wire.Errorf(wire.CodeInvalid, "old_string occurs %d times in %q (at lines %s); include more surrounding text to pick one, or set replace_all to replace all %d", n, args.Path, occurrenceLines(text, old), n)
	}
	var updated string
	if args.ReplaceAll {
		updated = strings.ReplaceAll(text, old, repl)
	} else {
		updated = strings.Replace(text, old, repl, 1)
	}
	if c := utf8.RuneCountInString(updated); c > wire.MaxFileChars {
		return nil, wire.Errorf(wire.CodeInvalid, "the edited %q would be %d characters; the limit is %d, so the file was left unchanged", args.Path, c, wire.MaxFileChars)
	}
	if werr := ops.replaceFile(args.Path, []byte(updated), perm, read); werr != nil {
		return nil, werr
	}
	made = true
	return &wire.EditResult{Path: args.Path, Replacements: n, SizeBytes: int64(len(updated)), Seq: seq}, nil
}

// toCRLF rewrites every line ending of s as "\r\n".
func toCRLF(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n")
}

// occurrenceLines lists the line numbers where sub starts, at most ten.
func occurrenceLines(text, sub string) string {
	var lines []string
	line, from := 1, 0
	for len(lines) < 10 {
		i := strings.Index(text[from:], sub)
		if i < 0 {
			break
		}
		line += strings.Count(text[from:from+i], "\n")
		lines = append(lines, fmt.Sprint(line))
		line += strings.Count(sub, "\n")
		from += i + len(sub)
	}
	return strings.Join(lines, ", ")
}

// remove answers OpRemove.
func (ops *fileOps) remove(p string) (*wire.RemoveResult, *wire.Error) {
	if p == "" {
		return nil, wire.Errorf(wire.CodeInvalid, "refusing to remove the workspace root; remove the entries inside it instead")
	}
	seq, done := ops.mutations.begin()
	defer done()
	// Even a removal that fails part way removed something.
	defer ops.watch.own(true, p)
	fi, err := ops.root.Lstat(p)
	if err != nil {
		return nil, pathError(p, err)
	}
	count := 1
	if fi.IsDir() {
		count = 0
		// WalkDir does not follow symlinks: a link is counted, its target is not.
		_ = fs.WalkDir(ops.root.FS(), p, func(string, fs.DirEntry, error) error {
			count++
			return nil
		})
		err = ops.root.RemoveAll(p)
	} else {
		err = ops.root.Remove(p)
	}
	if err != nil {
		return nil, pathError(p, err)
	}
	return &wire.RemoveResult{Path: p, RemovedEntries: count, Seq: seq}, nil
}
