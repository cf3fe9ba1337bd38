//go:build !linux

package disk

import (
	"context"
	"fmt"
	"runtime"
)

// A session disk is an ext4 image loop-mounted by the server, which only
// a Linux server can do; elsewhere the limit is not enforced by wink-mcp.

// FindTools says why disk limits cannot be enforced here.
func FindTools() (Tools, error) {
	return Tools{}, fmt.Errorf("%w: it loop-mounts an ext4 filesystem per session, which a %s server cannot do; "+
		"pass --disk-limit 0 to accept sessions that can fill the cache disk", ErrLimitUnavailable, runtime.GOOS)
}

// Mount fails: see FindTools.
func (Tools) Mount(context.Context, string, string, int64) error {
	_, err := FindTools()
	return err
}

// MountKept fails: see FindTools.
func (t Tools) MountKept(ctx context.Context, image, dir string, size int64) error {
	return t.Mount(ctx, image, dir, size)
}

// MountReadOnly fails: see FindTools.
func (Tools) MountReadOnly(string, string) error {
	_, err := FindTools()
	return err
}

// Unmount has nothing to do: nothing was mounted.
func Unmount(string) error { return nil }

// UnmountUnder has nothing to do: nothing was mounted.
func UnmountUnder(string) error { return nil }

// Used cannot say: no session here has a disk of its own.
func Used(string) int64 { return -1 }

// MountForExport mounts nothing: no session here had a disk.
func MountForExport(string, string) (func(), error) { return func() {}, nil }

// Freeze is Linux's.
func Freeze(string) (func() error, error) {
	return nil, fmt.Errorf("freezing a filesystem needs Linux, not %s", runtime.GOOS)
}
