//go:build linux

package checkpoints

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncObjects makes the objects written so far durable, with one syncfs of
// the store's filesystem rather than one fsync per object.
func syncObjects(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}

// freeBytes is the space an unprivileged writer has left on dir's disk.
func freeBytes(dir string) (int64, bool) {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return 0, false
	}
	return int64(st.Bavail) * st.Bsize, true
}
