package workspace

import (
	"log/slog"
	"os"
	"path/filepath"

	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/quota"
	"github.com/wink-mcp/wink-mcp/workspace/keep"
)

// countKeptCheckpoints charges the checkpoints of every kept workspace
// under cacheDir to its client's --quota-checkpoint-bytes, as found on
// disk: a kept workspace's checkpoints count while it is kept, through a
// restart of the server, not only while a session has it open. Each store
// is charged to the account its sessions' stores are (its directory), so
// a session that opens it later counts it again in place, not twice.
// A store that cannot be read is logged and not counted.
func countKeptCheckpoints(cacheDir string, ledger *quota.Ledger, log *slog.Logger) {
	if ledger.Limit(quota.CheckpointBytes) <= 0 {
		return // no checkpoint quota
	}
	entries, err := os.ReadDir(filepath.Join(cacheDir, workspacesDir))
	if err != nil {
		return // none kept yet
	}
	for _, e := range entries {
		if !e.IsDir() || CheckWorkspaceName(e.Name()) != nil {
			continue
		}
		root := keptRoot(cacheDir, e.Name())
		rec, err := keep.ReadRecord(root)
		if err != nil {
			continue
		}
		k := &keptWorkspace{root: root}
		n, err := checkpoints.Measure(k.storeDir())
		if err != nil {
			log.Warn("counting a kept workspace's checkpoints against its client's quota failed; they are not counted", "workspace", e.Name(), "err", err)
			continue
		}
		if n > 0 {
			ledger.Checkpoints(rec.Principal, k.storeDir()).Set(n)
		}
	}
}
