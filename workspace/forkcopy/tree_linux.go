//go:build linux

package forkcopy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Tree copies the directory tree src to dst, which must not exist:
// directories, regular files (with setuid, setgid and sticky bits),
// symlinks as links, fifos, overlay whiteouts (0:0 character devices) and
// extended attributes; with owners when this process may set them (root,
// or root of a user namespace), else owned by it. Hard links come out as
// separate files; sockets and other devices are left out.
//
// The source belongs to a running container, whose processes may swap
// any of its entries for a symlink at any moment: every entry is opened
// from its parent directory's descriptor without following a link
// (openat, O_NOFOLLOW), so the copy never leaves src, whatever is swapped
// when. A file that changes while it is copied (a command writing it) is
// copied again, up to maxRereads times, so that no copy is half of one
// write and half of the next as far as its size and times tell.
func Tree(src, dst string) error {
	sfd, err := unix.Open(src, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening %s: %w", src, err)
	}
	defer unix.Close(sfd)
	if err := os.Mkdir(dst, 0o700); err != nil {
		return err
	}
	dfd, err := unix.Open(dst, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	c := treeCopy{root: src, owners: os.Geteuid() == 0}
	if err := c.dir(sfd, dfd, ""); err != nil {
		return fmt.Errorf("copying the workspace's files: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(sfd, &st); err != nil {
		return err
	}
	return c.meta(sfd, dfd, "", &st)
}

// treeCopy is one Tree call.
type treeCopy struct {
	root string
	// owners says the copies get the originals' owners.
	owners bool
}

// dir copies the entries of the directory sfd (rel under the root) into
// the directory dfd.
func (c treeCopy) dir(sfd, dfd int, rel string) error {
	names, err := readNames(sfd)
	if err != nil {
		return fmt.Errorf("%s: %w", c.name(rel), err)
	}
	for _, name := range names {
		if err := c.entry(sfd, dfd, name, filepath.Join(rel, name)); err != nil {
			return err
		}
	}
	return nil
}

// entry copies the entry name of the directory sfd into dfd.
func (c treeCopy) entry(sfd, dfd int, name, rel string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(sfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("%s: %w", c.name(rel), err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if err := unix.Mkdirat(dfd, name, 0o700); err != nil {
			return fmt.Errorf("%s: %w", c.name(rel), err)
		}
		csfd, err := unix.Openat(sfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name(rel), err)
		}
		defer unix.Close(csfd)
		cdfd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(cdfd)
		if err := c.dir(csfd, cdfd, rel); err != nil {
			return err
		}
		if err := unix.Fstat(csfd, &st); err != nil {
			return err
		}
		return c.meta(csfd, cdfd, rel, &st)
	case unix.S_IFREG:
		return c.file(sfd, dfd, name, rel)
	case unix.S_IFLNK:
		target, err := readlinkat(sfd, name)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name(rel), err)
		}
		if err := unix.Symlinkat(target, dfd, name); err != nil {
			return err
		}
		return c.owner(dfd, name, &st)
	case unix.S_IFIFO:
		if err := unix.Mknodat(dfd, name, unix.S_IFIFO|0o600, 0); err != nil {
			return err
		}
	case unix.S_IFCHR:
		if st.Rdev != 0 {
			return nil // a device: never copied
		}
		if err := unix.Mknodat(dfd, name, unix.S_IFCHR|0o600, 0); err != nil {
			return fmt.Errorf("copying the overlay whiteout %s: %w", c.name(rel), err)
		}
	default:
		return nil // a socket or a block device: never copied
	}
	if err := c.owner(dfd, name, &st); err != nil {
		return err
	}
	return unix.Fchmodat(dfd, name, uint32(st.Mode&0o7777), 0)
}

// file copies the regular file name of sfd into dfd, again while it
// changes as it is read.
func (c treeCopy) file(sfd, dfd int, name, rel string) error {
	ifd, err := unix.Openat(sfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("%s: %w", c.name(rel), err)
	}
	in := os.NewFile(uintptr(ifd), c.name(rel))
	defer in.Close()
	var before unix.Stat_t
	if err := unix.Fstat(ifd, &before); err != nil {
		return err
	}
	if before.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil // swapped for something else since it was listed: left out
	}
	ofd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	out := os.NewFile(uintptr(ofd), name)
	defer out.Close()
	for try := 0; ; try++ {
		if err := out.Truncate(0); err != nil {
			return err
		}
		if err := copyExtents(in, out, before.Size); err != nil {
			return fmt.Errorf("%s: %w", c.name(rel), err)
		}
		if err := out.Truncate(before.Size); err != nil {
			return err
		}
		var after unix.Stat_t
		if err := unix.Fstat(ifd, &after); err != nil {
			return err
		}
		if after.Size == before.Size && after.Mtim == before.Mtim && after.Ctim == before.Ctim {
			break
		}
		if try == maxRereads {
			return fmt.Errorf("%s changed each of the %d times it was copied (a command is writing it); fork when it is done", c.name(rel), maxRereads+1)
		}
		before = after
	}
	return c.meta(ifd, ofd, rel, &before)
}

// meta gives the copy dfd of sfd its owner, mode and extended attributes.
func (c treeCopy) meta(sfd, dfd int, rel string, st *unix.Stat_t) error {
	if c.owners {
		if err := unix.Fchown(dfd, int(st.Uid), int(st.Gid)); err != nil {
			return fmt.Errorf("%s: %w", c.name(rel), err)
		}
	}
	if err := unix.Fchmod(dfd, uint32(st.Mode&0o7777)); err != nil {
		return err
	}
	return copyXattrs(sfd, dfd, c.name(rel))
}

// owner gives the entry name of dfd the owner st names, without following
// a link, when this process may.
func (c treeCopy) owner(dfd int, name string, st *unix.Stat_t) error {
	if !c.owners {
		return nil
	}
	return unix.Fchownat(dfd, name, int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW)
}

// name is an entry's path, for a message.
func (c treeCopy) name(rel string) string { return filepath.Join(c.root, rel) }

// readNames lists the directory fd's entries, reading a duplicate of it
// so that fd stays open.
func readNames(fd int) ([]string, error) {
	dup, err := unix.Dup(fd)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dup), "")
	defer f.Close()
	return f.Readdirnames(-1)
}

// readlinkat reads the link name of the directory fd.
func readlinkat(fd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(fd, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// copyXattrs copies the extended attributes of sfd (an overlay's opaque
// and redirect marks among them) to dfd, where this process may set them.
func copyXattrs(sfd, dfd int, name string) error {
	size, err := unix.Flistxattr(sfd, nil)
	if err != nil || size == 0 {
		return nil // none, or none to see here
	}
	buf := make([]byte, size)
	if size, err = unix.Flistxattr(sfd, buf); err != nil {
		return nil
	}
	for _, attr := range strings.Split(strings.TrimRight(string(buf[:size]), "\x00"), "\x00") {
		if attr == "" || strings.HasPrefix(attr, "security.") || strings.HasPrefix(attr, "system.") {
			continue // labels and ACLs are the host's to give
		}
		n, err := unix.Fgetxattr(sfd, attr, nil)
		if err != nil {
			continue
		}
		value := make([]byte, n)
		if n, err = unix.Fgetxattr(sfd, attr, value); err != nil {
			continue
		}
		if err := unix.Fsetxattr(dfd, attr, value[:n], 0); err != nil {
			return fmt.Errorf("copying the attribute %s of %s: %w", attr, name, err)
		}
	}
	return nil
}
