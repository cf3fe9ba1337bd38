//go:build linux

package forkcopy

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The ioctls that freeze and thaw a filesystem: _IOWR('X', 119, int) and
// _IOWR('X', 120, int) in linux/fs.h, which x/sys does not name.
const (
	fiFreeze = 0xC0045877
	fiThaw   = 0xC0045878
)

// freeze freezes the filesystem mounted at dir, flushing it whole to its
// device, and returns what thaws it.
func freeze(dir string) (func() error, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := unix.IoctlSetInt(int(f.Fd()), fiFreeze, 0); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		defer f.Close()
		return unix.IoctlSetInt(int(f.Fd()), fiThaw, 0)
	}, nil
}

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

// copySpecial makes a fifo or an overlay whiteout (a 0:0 character
// device) at to like the one at path; it reports false for what a copy
// leaves out (sockets, other devices).
func copySpecial(path, to string, info fs.FileInfo) (bool, error) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return false, nil
	}
	switch {
	case info.Mode()&fs.ModeNamedPipe != 0:
		return true, unix.Mkfifo(to, 0o600)
	case info.Mode()&fs.ModeCharDevice != 0 && st.Rdev == 0:
		if err := unix.Mknod(to, unix.S_IFCHR|0o600, 0); err != nil {
			return false, fmt.Errorf("copying the overlay whiteout %s: %w", path, err)
		}
		return true, nil
	}
	return false, nil
}

// copyMeta gives to path's mode, owner (when this process may set it) and
// extended attributes; directories get their modes later (Tree).
func copyMeta(path, to string, info fs.FileInfo) error {
	st, ok := info.Sys().(*syscall.Stat_t)
	if ok && os.Geteuid() == 0 {
		if err := os.Lchown(to, int(st.Uid), int(st.Gid)); err != nil {
			return err
		}
	}
	if info.Mode()&fs.ModeSymlink == 0 && !info.IsDir() {
		if err := os.Chmod(to, info.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)); err != nil {
			return err
		}
	}
	return copyXattrs(path, to)
}

// copyXattrs copies the extended attributes of path (an overlay's opaque
// and redirect marks among them) to to, where this process may set them.
func copyXattrs(path, to string) error {
	size, err := unix.Llistxattr(path, nil)
	if err != nil || size == 0 {
		return nil // none, or none to see here
	}
	buf := make([]byte, size)
	size, err = unix.Llistxattr(path, buf)
	if err != nil {
		return nil
	}
	for _, name := range strings.Split(strings.TrimRight(string(buf[:size]), "\x00"), "\x00") {
		if name == "" || strings.HasPrefix(name, "security.") || strings.HasPrefix(name, "system.") {
			continue // labels and ACLs are the host's to give
		}
		n, err := unix.Lgetxattr(path, name, nil)
		if err != nil {
			continue
		}
		value := make([]byte, n)
		if n, err = unix.Lgetxattr(path, name, value); err != nil {
			continue
		}
		if err := unix.Lsetxattr(to, name, value[:n], 0); err != nil {
			return fmt.Errorf("copying the attribute %s of %s: %w", name, path, err)
		}
	}
	return nil
}

// changeTime is when info's file last changed, metadata included.
func changeTime(info fs.FileInfo) time.Time {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
	}
	return zeroTime
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
