package workspace

import "github.com/wink-mcp/wink-mcp/workspace/disk"

// A session's directory is a filesystem of its own when disks are limited:
// package disk makes, mounts and unmounts it; the names here keep the
// server's and doctor's view of it.

// disksDir holds the images, under the instance directory, beside sessionsDir.
const disksDir = "disks"

// ErrDiskLimitUnavailable is returned when disk limits cannot be enforced.
var ErrDiskLimitUnavailable = disk.ErrLimitUnavailable

// diskTools are the programs a disk limit needs, found at start.
type diskTools = disk.Tools

// findDiskTools locates mkfs.ext4 and mount, or says why disk limits
// cannot be enforced on this host.
func findDiskTools() (diskTools, error) { return disk.FindTools() }

// DiskLimitSupport returns nil when this host can enforce a per-session
// disk limit, else an error wrapping ErrDiskLimitUnavailable that says why
// and what to do.
func DiskLimitSupport() error {
	_, err := findDiskTools()
	return err
}
