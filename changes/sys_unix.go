//go:build unix

package changes

import (
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// allocated returns the bytes info's file takes on disk.
func allocated(info fs.FileInfo) (int64, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Blocks * 512, true
}

// isNullDevice reports whether the device info describes is 0/0.
func isNullDevice(info fs.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && st.Rdev == 0
}

// fgetxattr reads an extended attribute through an open file, without
// switching the file to blocking mode as File.Fd would.
func fgetxattr(f *os.File, attr string, buf []byte) (n int, err error) {
	raw, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	if cerr := raw.Control(func(fd uintptr) { n, err = unix.Fgetxattr(int(fd), attr, buf) }); cerr != nil {
		return 0, cerr
	}
	return n, err
}
