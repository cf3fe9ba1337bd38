package doctor

import (
	"context"
	"fmt"

	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/workspace/forkcopy"
)

// forks says whether workspace_fork works with this configuration, its
// bounds, and whether the cache directory's filesystem shares a fork's
// blocks (reflinks) or copies its bytes.
func (d *doctor) forks(context.Context) Result {
	switch {
	case d.cfg.ForkLimit == 0:
		return Result{Status: OK, Detail: "off (--quota-forks 0): workspace_fork is refused"}
	case d.pods():
		return Result{Status: OK, Detail: "workspace_fork is refused with --engine kubernetes: a Pod's files are in the cluster (docs/forks.md)"}
	case d.cfg.FilesOnEngineHost:
		return Result{Status: OK, Detail: "workspace_fork is refused with the files on the Podman host: this server cannot copy them (docs/forks.md)"}
	}
	bytes := "no quota of bytes"
	if d.cfg.ForkBytes > 0 {
		bytes = checkpoints.FormatBytes(d.cfg.ForkBytes) + " of them (--quota-fork-bytes)"
	}
	detail := fmt.Sprintf("up to %d forks waiting per client (--quota-forks), %s, leaving one --disk-limit (at least 256 MiB) free on the cache disk for new sessions", d.cfg.ForkLimit, bytes)
	shares, err := forkcopy.Reflinks(d.cfg.CacheDir)
	switch {
	case err != nil:
		return Result{Status: Warn, Detail: detail + fmt.Sprintf("; whether %s shares a copy's blocks could not be tried: %v", d.cfg.CacheDir, err),
			Fix: "make --cache-dir a directory the server's user can write"}
	case shares:
		return Result{Status: OK, Detail: detail + fmt.Sprintf("; %s shares a copy's blocks (reflinks): a fork costs almost nothing until it is written", d.cfg.CacheDir)}
	}
	return Result{Status: OK, Detail: detail + fmt.Sprintf("; %s copies a fork's bytes (no reflinks; 10 forks of 100 MB took seconds on ext4 here, tens of milliseconds on XFS): "+
		"put --cache-dir on XFS (reflink=1) or Btrfs for copy-on-write forks", d.cfg.CacheDir)}
}
