package mounts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/wink-mcp/wink-mcp/wspath"
)

// pulledDir is where a copy brought back is unpacked before it replaces
// the last one.
const pulledDir = "pulled.tmp"

// UploadCopies copies the base of each copy mount of list not yet
// uploaded into the container's workspace through copyIn (a tar unpacked
// at the workspace root), owned by uid:gid, and marks it Uploaded. It runs
// between the container's creation and its start; the volume keeps the
// copies for the session's life, so later containers find them, edited.
func UploadCopies(ctx context.Context, list []Mounted, uid, gid int, copyIn func(ctx context.Context, r io.Reader) error) error {
	for i := range list {
		m := &list[i]
		if m.Mode != Copy || m.Uploaded {
			continue
		}
		r, w := io.Pipe()
		go func() { w.CloseWithError(WriteCopyTar(w, m.Base(), m.Path, uid, gid)) }()
		err := copyIn(ctx, r)
		r.CloseWithError(err)
		if err != nil {
			return fmt.Errorf("uploading %s to /workspace/%s on the Podman host: %w", m.HostPath, m.Path, err)
		}
		m.Uploaded = true
	}
	return nil
}

// PullCopies brings the files of each uploaded copy among list back from
// the session's container through copyOut (which writes a tar of the
// container path src) into workspaceDir/<path>, unpacking each, at most
// limit bytes, in the session directory sessionDir first and replacing
// the last ones.
func PullCopies(ctx context.Context, list []Mounted, sessionDir, workspaceDir string, limit int64, copyOut func(ctx context.Context, src string, w io.Writer) error) error {
	for _, m := range list {
		if m.Mode != Copy || !m.Uploaded {
			continue
		}
		if err := pullCopy(ctx, sessionDir, workspaceDir, m.Path, limit, copyOut); err != nil {
			return fmt.Errorf("bringing /workspace/%s back from the Podman host: %w", m.Path, err)
		}
	}
	return nil
}

// pullCopy brings one copy, at workspace path dest, back (see PullCopies).
func pullCopy(ctx context.Context, sessionDir, workspaceDir, dest string, limit int64, copyOut func(ctx context.Context, src string, w io.Writer) error) error {
	tmp := filepath.Join(sessionDir, pulledDir)
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
		err := ExtractTar(r, root, limit)
		r.CloseWithError(err)
		done <- err
	}()
	err = copyOut(ctx, wspath.Root+"/"+dest, w)
	w.CloseWithError(err)
	err = errors.Join(err, <-done)
	final := filepath.Join(workspaceDir, filepath.FromSlash(dest))
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
