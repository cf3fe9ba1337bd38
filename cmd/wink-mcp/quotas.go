package main

import (
	"fmt"
	"math"

	"github.com/wink-mcp/wink-mcp/quota"
	"github.com/wink-mcp/wink-mcp/server"
)

// resolveQuotas checks the per-client quotas and makes their ledger: a
// quota below one container's limits would let no workspace start.
func resolveQuotas(cfg *server.Config, opts *serveOptions) error {
	q, w := &opts.quotas, &cfg.Workspace
	q.MilliCPUs = int64(math.Round(opts.quotaCPUs * 1000))
	switch {
	case q.Workspaces < 0:
		return fmt.Errorf("--quota-workspaces %d: want 0 (no quota) or the number of workspaces one client may hold at once", q.Workspaces)
	case q.MemoryBytes < 0 || q.MemoryBytes > 0 && q.MemoryBytes < w.MemoryBytes:
		return fmt.Errorf("--quota-memory %d: want 0 (no quota) or at least one container's --memory (%d bytes), or no workspace could start", q.MemoryBytes, w.MemoryBytes)
	case q.EgressBytes < 0:
		return fmt.Errorf("--quota-egress-bytes %d: want 0 (no quota) or the bytes one client's sessions may carry in a rolling day", q.EgressBytes)
	case opts.quotaCPUs < 0 || opts.quotaCPUs > 0 && opts.quotaCPUs < w.CPUs:
		return fmt.Errorf("--quota-cpus %g: want 0 (no quota) or at least one container's --cpus (%g), or no workspace could start", opts.quotaCPUs, w.CPUs)
	}
	cfg.Quotas = quota.New(*q)
	return nil
}
