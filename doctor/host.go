package doctor

import (
	"context"
	"os/exec"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wink-mcp/wink-mcp/workspace"
)

// Cgroup layouts of a host.
const (
	cgroupsUnified = "unified (v2)"
	cgroupsHybrid  = "hybrid (v1 controllers with a v2 hierarchy)"
	cgroupsLegacy  = "legacy (v1)"
	cgroupsUnknown = "unknown"
)

// host is what the checks read from the machine they run on.
type host interface {
	// podmanVersion runs `podman --version`; path is "" when there is no podman.
	podmanVersion(ctx context.Context) (path, version string, err error)
	// cgroupLayout says how /sys/fs/cgroup is mounted.
	cgroupLayout() string
	// hardLimit returns the hard limit of an RLIMIT_* resource.
	hardLimit(resource int) (uint64, error)
	// freeBytes returns the space left to unprivileged users under dir.
	freeBytes(dir string) (uint64, error)
	// diskLimitSupport says why per-session disk limits cannot be enforced, or nil.
	diskLimitSupport() error
}

// localHost is the machine wink-mcp runs on.
type localHost struct{}

func (localHost) podmanVersion(ctx context.Context) (string, string, error) {
	path, err := exec.LookPath("podman")
	if err != nil {
		return "", "", nil
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").CombinedOutput()
	return path, strings.TrimSpace(string(out)), err
}

func (localHost) cgroupLayout() string {
	var st unix.Statfs_t
	if unix.Statfs("/sys/fs/cgroup", &st) != nil {
		return cgroupsUnknown
	}
	switch st.Type {
	case unix.CGROUP2_SUPER_MAGIC:
		return cgroupsUnified
	case unix.TMPFS_MAGIC:
		if unix.Statfs("/sys/fs/cgroup/unified", &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			return cgroupsHybrid
		}
		return cgroupsLegacy
	}
	return cgroupsUnknown
}

func (localHost) hardLimit(resource int) (uint64, error) {
	var l unix.Rlimit
	err := unix.Getrlimit(resource, &l)
	return l.Max, err
}

func (localHost) freeBytes(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

func (localHost) diskLimitSupport() error { return workspace.DiskLimitSupport() }
