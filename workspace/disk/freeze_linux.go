package disk

import (
	"os"

	"golang.org/x/sys/unix"
)

// The ioctls that freeze and thaw a filesystem: _IOWR('X', 119, int) and
// _IOWR('X', 120, int) in linux/fs.h, which x/sys does not name.
const (
	fiFreeze = 0xC0045877
	fiThaw   = 0xC0045878
)

// Freeze freezes the filesystem mounted at dir (FIFREEZE), flushing it
// whole to its device, and returns what thaws it. Writes to it wait,
// uninterruptibly, until then; a server killed in between leaves it frozen
// until UnmountUnder (the start-up sweep) thaws it.
func Freeze(dir string) (thaw func() error, err error) {
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

// thawLeftFrozen thaws the filesystem at dir if a server killed during a
// Freeze left it frozen: its container's writers wait uninterruptibly
// while it is, so neither they nor their container could be removed, and
// a detached mount would stay frozen for good. A filesystem not frozen
// (EINVAL) is left as it is.
func thawLeftFrozen(dir string) {
	f, err := os.Open(dir)
	if err != nil {
		return
	}
	defer f.Close()
	_ = unix.IoctlSetInt(int(f.Fd()), fiThaw, 0)
}
