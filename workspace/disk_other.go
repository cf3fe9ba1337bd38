//go:build !linux

package workspace

import (
	"context"
	"fmt"
	"runtime"
)

// A session disk is an ext4 image loop-mounted by the server, which only
// a Linux server can do; elsewhere the limit is not enforced by wink-mcp.

func findDiskTools() (diskTools, error) {
	return diskTools{}, fmt.Errorf("%w: it loop-mounts an ext4 filesystem per session, which a %s server cannot do; "+
		"pass --disk-limit 0 to accept sessions that can fill the cache disk", ErrDiskLimitUnavailable, runtime.GOOS)
}

func (diskTools) mountDisk(context.Context, string, string, int64) error {
	_, err := findDiskTools()
	return err
}

func (t diskTools) mountKeptDisk(ctx context.Context, image, dir string, size int64) error {
	return t.mountDisk(ctx, image, dir, size)
}

// unmountDisk and unmountUnder have nothing to do: nothing was mounted.
func unmountDisk(string) error  { return nil }
func unmountUnder(string) error { return nil }

// mountKeptDisks mounts nothing: no session here had a disk.
func mountKeptDisks(string) ([]string, map[string]error) { return nil, nil }

// diskUsed cannot say: no session here has a disk of its own.
func diskUsed(string) int64 { return -1 }

// mountForExport mounts nothing: no session here had a disk.
func mountForExport(string, string) (func(), error) { return func() {}, nil }
