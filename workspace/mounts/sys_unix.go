//go:build unix

package mounts

import (
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// noFollow makes an open fail on a symbolic link.
const noFollow = unix.O_NOFOLLOW

// fileOwner returns the uid and gid that own info's file.
func fileOwner(info fs.FileInfo) (uid, gid int) {
	st := info.Sys().(*syscall.Stat_t)
	return int(st.Uid), int(st.Gid)
}

// syncDir flushes a directory's entries to disk, so that a file renamed
// into it is there after a crash.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
