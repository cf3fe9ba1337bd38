package disk

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/hostcmd"
)

// FindTools locates mkfs.ext4 and mount, or says why disk limits cannot
// be enforced on this host (an error wrapping ErrLimitUnavailable).
func FindTools() (Tools, error) {
	if os.Geteuid() != 0 {
		return Tools{}, fmt.Errorf("%w: it loop-mounts a filesystem per session, which needs root, and this server runs as uid %d; "+
			"run it as root (rootful Podman), or pass --disk-limit 0 to accept sessions that can fill the cache disk", ErrLimitUnavailable, os.Geteuid())
	}
	t := Tools{mkfs: hostcmd.Look("mkfs.ext4"), mount: hostcmd.Look("mount")}
	var missing []string
	if t.mkfs == "" {
		missing = append(missing, "mkfs.ext4")
	}
	if t.mount == "" {
		missing = append(missing, "mount")
	}
	if len(missing) > 0 {
		return Tools{}, fmt.Errorf("%w: %s not found; install e2fsprogs and mount (`apt-get install e2fsprogs mount`), or pass --disk-limit 0",
			ErrLimitUnavailable, strings.Join(missing, " and "))
	}
	return t, nil
}

// Mount makes dir the root of a new ext4 filesystem of size bytes kept
// in the sparse file image. It refuses when the disk holding image has less
// than size free, so one session alone can never fill it.
func (t Tools) Mount(ctx context.Context, image, dir string, size int64) error {
	return t.makeDisk(ctx, image, dir, size, false)
}

// MountKept mounts a kept workspace's filesystem at dir: the mount its
// last owner left when that process was killed, else its image, made when
// missing, with a journal, since it outlives sessions and processes.
func (t Tools) MountKept(ctx context.Context, image, dir string, size int64) error {
	points, err := MountPoints()
	if err != nil {
		return err
	}
	if slices.Contains(points, dir) {
		return nil
	}
	if _, err := os.Stat(image); errors.Is(err, os.ErrNotExist) {
		return t.makeDisk(ctx, image, dir, size, true)
	}
	// A filesystem detached lazily (its last user held a file open) is
	// still mounted somewhere no path names; mounting the image again
	// would make two filesystems of one disk.
	for deadline := time.Now().Add(5 * time.Second); loopAttached(image); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("the kept workspace's disk %s is still in use by a filesystem an earlier owner detached; try again in a moment", image)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating the session directory: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, diskToolTimeout)
	defer cancel()
	if err := t.mountImage(ctx, image, dir, "nosuid,nodev,noatime"); err != nil {
		return errors.Join(fmt.Errorf("mounting the kept workspace's filesystem %s: %w", image, err), Unmount(dir))
	}
	directIO(dir)
	return nil
}

// makeDisk makes and mounts a new filesystem image; with journal it
// survives a crash of the machine, as a kept workspace's must.
func (t Tools) makeDisk(ctx context.Context, image, dir string, size int64, journal bool) error {
	if err := os.MkdirAll(filepath.Dir(image), 0o700); err != nil {
		return fmt.Errorf("creating the disk image directory: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating the session directory: %w", err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(filepath.Dir(image), &st); err != nil {
		return fmt.Errorf("checking free space for the session disk: %w", err)
	}
	if free := int64(st.Bavail) * st.Bsize; free < size {
		return fmt.Errorf("the cache disk holding %s has %s free, less than one session's disk limit of %s: "+
			"free space there, point --cache-dir at a larger disk, or lower --disk-limit", filepath.Dir(image), checkpoints.FormatBytes(free), checkpoints.FormatBytes(size))
	}
	f, err := os.OpenFile(image, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("creating the session disk image: %w", err)
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(image)
		return fmt.Errorf("sizing the session disk image: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, diskToolTimeout)
	defer cancel()
	// No journal and no reserved blocks: the filesystem lives as long as a
	// session, and all of it is the session's.
	args := []string{"-q", "-F", "-m", "0", "-E", "lazy_itable_init=1,nodiscard"}
	if journal {
		args = append(args, "-J", "size=4") // the smallest, not 64 MiB of a 2 GiB disk
	} else {
		args = append(args, "-O", "^has_journal")
	}
	if err := hostcmd.Run(ctx, nil, t.mkfs, append(args, image)...); err != nil {
		os.Remove(image)
		return fmt.Errorf("making the session filesystem: %w", err)
	}
	if err := t.mountImage(ctx, image, dir, "nosuid,nodev,noatime"); err != nil {
		// mount killed by a cancelled call may have mounted all the same.
		err = errors.Join(fmt.Errorf("mounting the session filesystem: %w", err), Unmount(dir))
		os.Remove(image)
		return err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		err = errors.Join(fmt.Errorf("securing the session directory: %w", err), Unmount(dir))
		os.Remove(image)
		return err
	}
	directIO(dir)
	return nil
}

// directIO makes the loop device under dir write straight to its image
// instead of through a second page cache: a session filling its disk then
// costs the host half the memory copies, which other sessions feel less.
// It is an optimisation; a backing filesystem without O_DIRECT keeps the
// default.
func directIO(dir string) {
	var st unix.Stat_t
	if unix.Stat(dir, &st) != nil || unix.Major(st.Dev) != 7 {
		return
	}
	fd, err := unix.Open(fmt.Sprintf("/dev/loop%d", unix.Minor(st.Dev)), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	_ = unix.IoctlSetInt(fd, unix.LOOP_SET_DIRECT_IO, 1)
}

// Unmount unmounts the filesystem at dir; the loop device goes with it.
// A filesystem still in use is tried again for a moment (a process forked
// elsewhere in this server holds its descriptors until it execs), then
// detached, to go when its last user does. Nothing mounted at dir is not an
// error.
func Unmount(dir string) error {
	err := unix.Unmount(dir, 0)
	for wait := time.Millisecond; errors.Is(err, unix.EBUSY) && wait <= busyUnmountWait; wait *= 2 {
		time.Sleep(wait)
		err = unix.Unmount(dir, 0)
	}
	if errors.Is(err, unix.EBUSY) {
		err = unix.Unmount(dir, unix.MNT_DETACH)
	}
	if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return fmt.Errorf("unmounting the session filesystem at %s: %w", dir, err)
}

// UnmountUnder detaches every filesystem mounted at or below root, deepest
// first, each thawed first if it was left frozen: the session disks a
// server killed with SIGKILL left behind.
func UnmountUnder(root string) error {
	points, err := MountPoints()
	if err != nil {
		return err
	}
	var under []string
	for _, p := range points {
		if p == root || strings.HasPrefix(p, root+"/") {
			under = append(under, p)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(under)))
	var errs []error
	for _, p := range under {
		thawLeftFrozen(p)
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// MountReadOnly mounts one kept image read-only at dir, trying again
// after failures that pass.
func (t Tools) MountReadOnly(image, dir string) error {
	var err error
	for try := range keptMountTries {
		if try > 0 {
			time.Sleep(time.Duration(try) * 100 * time.Millisecond)
		}
		ctx, cancel := context.WithTimeout(context.Background(), diskToolTimeout)
		err = t.mountImage(ctx, image, dir, "ro,nosuid,nodev,noexec")
		cancel()
		if err == nil {
			return nil
		}
	}
	return err
}

// loopAttached reports whether a loop device still has image as its
// backing file.
func loopAttached(image string) bool {
	real, err := filepath.EvalSymlinks(image)
	if err != nil {
		return false
	}
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, f := range files {
		if data, err := os.ReadFile(f); err == nil && strings.TrimSpace(string(data)) == real {
			return true
		}
	}
	return false
}

// Used returns the bytes the filesystem at dir holds, -1 when statfs
// cannot say.
func Used(dir string) int64 {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return -1
	}
	return int64(st.Blocks-st.Bfree) * st.Bsize
}

// MountForExport makes the files of a session left by a dead server
// readable at dir: already there when its disk is still mounted (the
// server was killed), else its image mounted read-only (the machine
// restarted). release undoes what it did.
func MountForExport(image, dir string) (release func(), err error) {
	points, err := MountPoints()
	if err != nil {
		return nil, err
	}
	if slices.Contains(points, dir) {
		return func() {}, nil
	}
	if _, err := os.Stat(image); err != nil || os.Geteuid() != 0 {
		return func() {}, nil // no disk: the files are in dir itself
	}
	t := Tools{mount: hostcmd.Look("mount")}
	if t.mount == "" {
		return nil, errors.New("its disk image needs the mount program, which is not on $PATH or in /usr/sbin or /sbin")
	}
	if err := t.MountReadOnly(image, dir); err != nil {
		return nil, fmt.Errorf("mounting its disk image %s to read it: %w", image, err)
	}
	return func() { _ = Unmount(dir) }, nil
}
