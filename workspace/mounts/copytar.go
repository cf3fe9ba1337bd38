package mounts

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/wink-mcp/wink-mcp/checkpoints"
)

// With the files on the Podman host, a copy mount's files go there as a
// tar (WriteCopyTar) and come back as one (ExtractTar), which is the
// session's, so hostile.

// WriteCopyTar writes a tar of the directory base as the workspace path
// dest, with dest's parent directories, every entry owned by uid:gid.
func WriteCopyTar(w io.Writer, base, dest string, uid, gid int) error {
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

// ExtractTar unpacks directories, regular files and symlinks from r under
// root, which confines every name; anything else is skipped. It stops with
// an error once the files hold more than limit bytes.
func ExtractTar(r io.Reader, root *os.Root, limit int64) error {
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
