//go:build unix

package workspace

import (
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// noFollow makes an open fail on a symbolic link.
const noFollow = unix.O_NOFOLLOW

// errLocked is tryLock's error when another holds the lock.
var errLocked = unix.EWOULDBLOCK

// tryLock takes an exclusive lock on f, which lasts until f is closed,
// without waiting for one held by another.
func tryLock(f *os.File) error {
	return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
}

// allocatedBytes is what the file info describes takes on its disk.
func allocatedBytes(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return info.Size()
}

// freeBytesAt is the space an unprivileged writer has left on dir's disk;
// ok is false when it cannot be known.
func freeBytesAt(dir string) (free int64, ok bool) {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}
