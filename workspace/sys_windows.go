package workspace

import (
	"io/fs"
	"os"

	"golang.org/x/sys/windows"
)

// noFollow is 0: Windows has no open flag that refuses a symbolic link.
const noFollow = 0

// errLocked is tryLock's error when another holds the lock.
var errLocked = windows.ERROR_LOCK_VIOLATION

// tryLock takes an exclusive lock on f, which lasts until f is closed,
// without waiting for one held by another.
func tryLock(f *os.File) error {
	var whole windows.Overlapped
	return windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &whole)
}

// allocatedBytes is the file's size: Windows does not say what it takes.
func allocatedBytes(info fs.FileInfo) int64 { return info.Size() }

// freeBytesAt is not known here.
func freeBytesAt(string) (int64, bool) { return 0, false }
