package workspace

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/workspace/mounts"
)

// With the files on the Podman host (Config.FilesOnPodmanHost), a copy
// mount's base stays in the session directory here, as it does locally,
// while the session's copy lives in the workspace volume there: it is
// uploaded once when the session's first container is made, and brought
// back, whole, whenever its changes are read (Changes, Diff, the export at
// the session's end), into <session>/workspace/<path>, where they are read
// as the local copy is.

// pulledDir is where a copy brought back is unpacked before it replaces
// the last one.
const pulledDir = "pulled.tmp"

// copyLimit bounds what one copy brought back may hold: the disk limit,
// or its default when the limit is off.
func (m *Manager) copyLimit() int64 {
	if m.cfg.DiskBytes > 0 {
		return m.cfg.DiskBytes
	}
	return DefaultDiskBytes
}

// uploadCopiesLocked copies the base of each copy mount not yet uploaded
// into the container's workspace, owned by uid:gid. It runs between the
// container's creation and its start; the volume keeps the copies for the
// session's life, so later containers find them, edited.
func (s *Session) uploadCopiesLocked(ctx context.Context, uid, gid int) error {
	for i := range s.mounts {
		m := &s.mounts[i]
		if m.Mode != MountCopy || m.Uploaded {
			continue
		}
		r, w := io.Pipe()
		go func() { w.CloseWithError(writeCopyTar(w, m.Base(), m.Path, uid, gid)) }()
		err := s.m.eng.CopyIn(ctx, s.name, Root, r)
		r.CloseWithError(err)
		if err != nil {
			return fmt.Errorf("uploading %s to /workspace/%s on the Podman host: %w", m.HostPath, m.Path, err)
		}
		m.Uploaded = true
	}
	return nil
}

// writeCopyTar writes a tar of the directory base as the workspace path
// dest, with dest's parent directories, every entry owned by uid:gid.
func writeCopyTar(w io.Writer, base, dest string, uid, gid int) error {
	t := tar.NewWriter(w)
	dir := ""
	for _, seg := range strings.Split(dest, "/") {
		dir = path.Join(dir, seg)
		if err := t.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755, Uid: uid, Gid: gid}); err != nil {
			return err
		}
	}
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == base {
			return err
		}
		rel, _ := filepath.Rel(base, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		h := &tar.Header{Name: path.Join(dest, filepath.ToSlash(rel)), Mode: int64(info.Mode().Perm()), Uid: uid, Gid: gid, ModTime: info.ModTime()}
		switch {
		case d.IsDir():
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		case d.Type()&fs.ModeSymlink != 0:
			if h.Linkname, err = os.Readlink(p); err != nil {
				return err
			}
			h.Typeflag = tar.TypeSymlink
		case d.Type().IsRegular():
			h.Typeflag, h.Size = tar.TypeReg, info.Size()
		default:
			return nil
		}
		if err := t.WriteHeader(h); err != nil {
			return err
		}
		if h.Typeflag != tar.TypeReg {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.CopyN(t, f, h.Size)
		return err
	})
	if err != nil {
		return err
	}
	return t.Close()
}

// pullForExportLocked brings the copies back for the export at the
// session's end, making a container to read the volume if the session's
// went idle. The caller holds pullMu, then mu.
func (s *Session) pullForExportLocked(ctx context.Context) error {
	if !slices.ContainsFunc(s.mounts, func(m mounts.Mounted) bool { return m.Mode == MountCopy && m.Uploaded }) {
		return nil
	}
	if !s.created {
		if _, err := s.createLocked(ctx); err != nil {
			return err
		}
	}
	return s.pullCopiesOf(ctx, s.mounts)
}

// pullCopies brings the copies back for a call reading the changes; the
// returned function ends the read, which no other may overlap.
func (s *Session) pullCopies(ctx context.Context) (func(), error) {
	s.pullMu.Lock()
	if _, err := s.ensure(ctx); err != nil {
		s.pullMu.Unlock()
		return nil, err
	}
	s.mu.Lock()
	mounts := slices.Clone(s.mounts)
	s.mu.Unlock()
	if err := s.pullCopiesOf(ctx, mounts); err != nil {
		s.pullMu.Unlock()
		return nil, err
	}
	return s.pullMu.Unlock, nil
}

// pullCopiesOf brings the files of each uploaded copy among mounts back
// from the session's container into <session>/workspace/<path>, replacing
// the last ones.
func (s *Session) pullCopiesOf(ctx context.Context, mounts []mounts.Mounted) error {
	for _, m := range mounts {
		if m.Mode != MountCopy || !m.Uploaded {
			continue
		}
		if err := s.pullCopy(ctx, m.Path); err != nil {
			return fmt.Errorf("bringing /workspace/%s back from the Podman host: %w", m.Path, err)
		}
	}
	return nil
}

func (s *Session) pullCopy(ctx context.Context, dest string) error {
	tmp := filepath.Join(s.dir, pulledDir)
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	root, err := os.OpenRoot(tmp)
	if err != nil {
		return err
	}
	defer root.Close()
	r, w := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := extractTar(r, root, s.m.copyLimit())
		r.CloseWithError(err)
		done <- err
	}()
	err = s.m.eng.CopyOut(ctx, s.name, Root+"/"+dest, w)
	w.CloseWithError(err)
	err = errors.Join(err, <-done)
	final := filepath.Join(s.workspaceDir(), filepath.FromSlash(dest))
	if errors.Is(err, fs.ErrNotExist) {
		return os.RemoveAll(final) // the session removed the whole copy
	}
	if err != nil {
		return err
	}
	// The archive's entries are named from the copy's own directory name.
	top := filepath.Join(tmp, path.Base(dest))
	if _, err := os.Lstat(top); err != nil {
		return fmt.Errorf("the copy came back without its directory: %w", err)
	}
	if err := os.RemoveAll(final); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o700); err != nil {
		return err
	}
	return os.Rename(top, final)
}

// extractTar unpacks directories, regular files and symlinks from r under
// root, which confines every name; anything else is skipped. It stops with
// an error once the files hold more than limit bytes.
func extractTar(r io.Reader, root *os.Root, limit int64) error {
	t := tar.NewReader(r)
	var total int64
	for {
		h, err := t.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "/"))
		if name == "." || strings.HasPrefix(name, "../") || name == ".." {
			continue
		}
		if dir := path.Dir(name); dir != "." {
			if err := root.MkdirAll(dir, 0o700); err != nil {
				return err
			}
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(name, 0o700); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := root.Symlink(h.Linkname, name); err != nil {
				return err
			}
		case tar.TypeReg:
			if total += h.Size; total > limit {
				return fmt.Errorf("it holds more than %s, more than this server brings back to compare (the disk limit, --disk-limit); remove files from it", checkpoints.FormatBytes(limit))
			}
			f, err := root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, fs.FileMode(h.Mode).Perm()|0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, t)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
}
