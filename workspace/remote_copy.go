package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"

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
		go func() { w.CloseWithError(mounts.WriteCopyTar(w, m.Base(), m.Path, uid, gid)) }()
		err := s.m.eng.CopyIn(ctx, s.name, Root, r)
		r.CloseWithError(err)
		if err != nil {
			return fmt.Errorf("uploading %s to /workspace/%s on the Podman host: %w", m.HostPath, m.Path, err)
		}
		m.Uploaded = true
	}
	return nil
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
		err := mounts.ExtractTar(r, root, s.m.copyLimit())
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
