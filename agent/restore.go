//go:build linux

package agent

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wink-mcp/wink-mcp/wire"
)

// readFiles answers OpReadFiles: ranges of regular files, opened without
// following a final symlink and without blocking, each with the file's
// state after it was read.
func (a *Agent) readFiles(args wire.ReadFilesArgs) (*wire.ReadFilesResult, *wire.Error) {
	total := 0
	for _, r := range args.Files {
		if r.Offset < 0 || r.Limit < 0 {
			return nil, wire.Errorf(wire.CodeBadRequest, "a range of %q is negative", r.Path.String())
		}
		total += r.Limit
	}
	if total > wire.MaxChunkBytes {
		return nil, wire.Errorf(wire.CodeBadRequest, "the ranges ask for %d bytes; the limit is %d", total, wire.MaxChunkBytes)
	}
	res := &wire.ReadFilesResult{Files: make([]wire.FileData, 0, len(args.Files))}
	for _, r := range args.Files {
		res.Files = append(res.Files, a.readRange(r))
	}
	return res, nil
}

func (a *Agent) readRange(r wire.FileRange) wire.FileData {
	p := r.Path.String()
	f, err := a.root.OpenFile(rel(p), os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return wire.FileData{Error: err.Error()}
	}
	defer f.Close()
	var before, after unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &before); err != nil {
		return wire.FileData{Error: err.Error()}
	}
	if before.Mode&unix.S_IFMT != unix.S_IFREG {
		return wire.FileData{Error: "not a regular file"}
	}
	now := time.Now().UnixNano()
	buf := make([]byte, max(min(int64(r.Limit), before.Size-r.Offset), 0))
	n, err := f.ReadAt(buf, r.Offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return wire.FileData{Error: err.Error()}
	}
	if err := unix.Fstat(int(f.Fd()), &after); err != nil {
		return wire.FileData{Error: err.Error()}
	}
	return wire.FileData{Data: buf[:n], Size: before.Size, Mtime: before.Mtim.Nano(), Ctime: before.Ctim.Nano(), Ino: before.Ino,
		ReadUnixNanos: now, Changed: after.Ctim != before.Ctim || after.Size != before.Size || after.Mtim != before.Mtim}
}

// uploadName is what the server names an upload: a random token.
var uploadName = regexp.MustCompile(`^[0-9a-f]{8,32}$`)

// apply answers OpApply: it makes the steps in order, with no tool change
// in between, and stops at the first that fails.
func (a *Agent) apply(args wire.ApplyArgs) (*wire.ApplyResult, *wire.Error) {
	_, done := a.mutations.begin()
	defer done()
	defer a.watch.discard()
	res := &wire.ApplyResult{}
	for _, st := range args.Steps {
		p := st.Path.String()
		if p == "" && st.Step != wire.StepChmod {
			return res, wire.Errorf(wire.CodeInvalid, "step %d (%s) names the workspace root", res.Done, st.Step)
		}
		if err := a.step(st, p); err != nil {
			return res, wire.Errorf(wire.CodeInvalid, "restoring %q (%s): %v", p, st.Step, err)
		}
		res.Done++
	}
	return res, nil
}

func (a *Agent) step(st wire.ApplyStep, p string) error {
	switch st.Step {
	case wire.StepRemove:
		info, err := a.root.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil
		case err != nil:
			return err
		case info.IsDir():
			return a.root.RemoveAll(p)
		}
		return a.root.Remove(p)
	case wire.StepMkdir:
		err := a.root.Mkdir(p, 0o700)
		if errors.Is(err, fs.ErrExist) {
			if info, lerr := a.root.Lstat(p); lerr == nil && info.IsDir() {
				err = nil
			}
		}
		if err != nil {
			return err
		}
		return a.root.Chmod(p, fileMode(st.Mode))
	case wire.StepChmod:
		return a.root.Chmod(rel(p), fileMode(st.Mode))
	case wire.StepWrite:
		return a.writeUpload(st, p)
	case wire.StepSymlink:
		if st.Target == nil {
			return errors.New("no target")
		}
		return a.root.Symlink(st.Target.String(), p)
	case wire.StepFifo:
		dir, err := a.root.Open(rel(path.Dir(p)))
		if err != nil {
			return err
		}
		defer dir.Close()
		return unix.Mkfifoat(int(dir.Fd()), path.Base(p), st.Mode&0o7777)
	}
	return errors.New("unknown step")
}

// writeUpload writes a step's bytes into its upload, a file beside the
// path, and with Final gives it its mode and renames it over the path.
func (a *Agent) writeUpload(st wire.ApplyStep, p string) error {
	if !uploadName.MatchString(st.Upload) {
		return errors.New("bad upload name")
	}
	tmp := path.Join(path.Dir(p), ".wink-restore-"+st.Upload)
	flags := os.O_WRONLY
	if st.Offset == 0 {
		flags |= os.O_CREATE | os.O_TRUNC
	}
	f, err := a.root.OpenFile(tmp, flags|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(st.Data, st.Offset)
	if err == nil && st.Final {
		err = f.Chmod(fileMode(st.Mode))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && st.Final {
		err = a.root.Rename(tmp, p)
	}
	if err != nil {
		_ = a.root.Remove(tmp)
	}
	return err
}

// fileMode turns permission bits with setuid, setgid and sticky into Go's.
func fileMode(bits uint32) fs.FileMode {
	m := fs.FileMode(bits & 0o777)
	if bits&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if bits&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if bits&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}
