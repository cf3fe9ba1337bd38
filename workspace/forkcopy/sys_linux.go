//go:build linux

package forkcopy

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// copyExtents copies the data of in, size bytes, to out, skipping holes
// (SEEK_DATA, SEEK_HOLE); io.Copy between two files is copy_file_range.
func copyExtents(in, out *os.File, size int64) error {
	fd := int(in.Fd())
	for off := int64(0); off < size; {
		data, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			return nil // only a hole is left
		}
		if err != nil {
			return copyRange(in, out, 0, size) // no SEEK_DATA here: all of it
		}
		hole, err := unix.Seek(fd, data, unix.SEEK_HOLE)
		if err != nil {
			return err
		}
		if err := copyRange(in, out, data, hole-data); err != nil {
			return err
		}
		off = hole
	}
	_, err := in.Seek(0, io.SeekStart)
	return err
}

// copyRange copies n bytes of in from off to out at the same offset, in
// the kernel (copy_file_range) where both files allow it.
func copyRange(in, out *os.File, off, n int64) error {
	for n > 0 {
		src, dst := off, off
		c, err := unix.CopyFileRange(int(in.Fd()), &src, int(out.Fd()), &dst, int(min(n, 1<<30)), 0)
		if err != nil {
			if errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP) {
				return copyPlain(in, out, off, n)
			}
			return err
		}
		if c == 0 {
			return io.ErrUnexpectedEOF // the file shrank while copied
		}
		off, n = off+int64(c), n-int64(c)
	}
	return nil
}

// Reflinks reports whether the filesystem of dir shares a copy's blocks
// (FICLONE: XFS made with reflink=1, Btrfs), where Image's and Sparse's
// copies cost almost nothing until written; it tries on two files of its
// own, which it removes.
func Reflinks(dir string) (bool, error) {
	src, err := os.CreateTemp(dir, ".reflink-probe-*")
	if err != nil {
		return false, err
	}
	defer os.Remove(src.Name())
	defer src.Close()
	if _, err := src.Write(make([]byte, 4096)); err != nil {
		return false, err
	}
	dst, err := os.CreateTemp(dir, ".reflink-probe-*")
	if err != nil {
		return false, err
	}
	defer os.Remove(dst.Name())
	defer dst.Close()
	err = unix.IoctlFileClone(int(dst.Fd()), int(src.Fd()))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ENOTTY) || errors.Is(err, unix.ENOSYS):
		return false, nil
	}
	return false, err
}
