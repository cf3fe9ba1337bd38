package doctor

import (
	"context"
	"os/exec"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/hostcmd"
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
	// hardLimits returns the hard limits of open files and processes.
	hardLimits() (nofile, nproc uint64, err error)
	// freeBytes returns the space left to unprivileged users under dir.
	freeBytes(dir string) (uint64, error)
	// diskLimitSupport says why per-session disk limits cannot be enforced, or nil.
	diskLimitSupport() error
	// criu says, in a line, whether CRIU could checkpoint processes here.
	criu(ctx context.Context) string
	// inotifyLimits returns fs.inotify.max_user_watches and max_user_instances.
	inotifyLimits() (watches, instances uint64, err error)
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
	out, err := hostcmd.Command(ctx, path, nil, "--version").CombinedOutput()
	return path, strings.TrimSpace(string(out)), err
}

func (localHost) diskLimitSupport() error { return workspace.DiskLimitSupport() }

func (localHost) criu(ctx context.Context) string { return criuCheck(ctx) }
