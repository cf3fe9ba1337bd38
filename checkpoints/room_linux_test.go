//go:build linux

package checkpoints

import (
	"errors"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestADiskWithoutRoomIsNotACap: a store on a disk with less than its
// margin free refuses a checkpoint as ErrDiskFull, naming the disk and
// what it has free, and still as ErrOverCap for callers that only ask
// whether it fits; a store under its cap on a roomy disk is neither.
func TestADiskWithoutRoomIsNotACap(t *testing.T) {
	if testing.Short() {
		t.Skip("needs root; -short (make unit) leaves it out")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=8m"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("mounting a small tmpfs: %v", err)
		}
		t.Skipf("mounting a small tmpfs needs root: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	s, err := Open(dir, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Room(1)
	if !errors.Is(err, ErrDiskFull) || !errors.Is(err, ErrOverCap) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "MiB free") {
		t.Errorf("room on a disk with 8 MiB free = %v; want ErrDiskFull naming the disk and its free space", err)
	}
	roomy, _ := Open(t.TempDir(), 100)
	if err := roomy.Room(101); !errors.Is(err, ErrOverCap) || errors.Is(err, ErrDiskFull) {
		t.Errorf("room past the cap = %v; want ErrOverCap, not ErrDiskFull", err)
	}
}
