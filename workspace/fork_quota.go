package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/workspace/keep"
)

// forkLedger counts, per principal, the forks waiting on disk and those
// being copied in this process, under one lock with their reservation, so
// that a crowd of workspace_fork calls cannot pass the limits together.
type forkLedger struct {
	mu sync.Mutex
	// copying are the forks being copied, by name: whose, and what each
	// will take when copied.
	copying map[string]forkCopying
}

// forkCopying is a fork being copied.
type forkCopying struct {
	principal string
	bytes     int64
}

// take reserves count forks of each bytes for principal, checked against
// the limits with those waiting on disk, naming each and reserving it with
// reserveOne; release ends their count as being copied, once they are.
func (l *forkLedger) take(m *Manager, principal string, count int, each int64, reserveOne func(name string) error) (names []string, release func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	have, held := l.waiting(m.cfg.CacheDir, principal)
	if limit := m.cfg.ForkLimit; limit > 0 && have+count > limit {
		return nil, nil, fmt.Errorf("%d forks would pass the limit of %d forks waiting for their handles per client (--quota-forks): %d wait already; "+
			"claim them (workspace_attach, or workspace_open with handoff) or let them expire, or fork fewer", count, limit, have)
	}
	need := int64(count) * each
	if limit := m.cfg.ForkBytes; limit > 0 && held+need > limit {
		return nil, nil, fmt.Errorf("%d forks of %s each would pass the limit of %s of forks waiting for their handles per client (--quota-fork-bytes): %s wait already; "+
			"claim them or let them expire, fork fewer, or make the workspace smaller (rm, workspace_checkpoint_delete)",
			count, checkpoints.FormatBytes(each), checkpoints.FormatBytes(limit), checkpoints.FormatBytes(held))
	}
	if free, ok := freeBytesAt(m.cfg.CacheDir); ok && free-need < forkDiskReserve(m.cfg) {
		return nil, nil, fmt.Errorf("%d forks of %s each need %s on the cache disk, which has %s free and keeps %s free for new sessions (one --disk-limit, at least 256 MiB): "+
			"fork fewer, make the workspace smaller, or free space under --cache-dir",
			count, checkpoints.FormatBytes(each), checkpoints.FormatBytes(need), checkpoints.FormatBytes(free), checkpoints.FormatBytes(forkDiskReserve(m.cfg)))
	}
	if l.copying == nil {
		l.copying = map[string]forkCopying{}
	}
	release = func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, name := range names {
			delete(l.copying, name)
		}
	}
	for range count {
		name := forkPrefix + newWarmKey()
		names = append(names, name)
		l.copying[name] = forkCopying{principal: principal, bytes: each}
		if err := reserveOne(name); err != nil {
			for _, name := range names {
				delete(l.copying, name)
				_ = removeKeptFiles(keptRoot(m.cfg.CacheDir, name), name)
			}
			return nil, nil, fmt.Errorf("reserving a fork: %w", err)
		}
	}
	return names, release, nil
}

// waiting counts principal's forks waiting for their handles, on disk or
// being copied, and what they take (or will, once copied). The caller
// holds l.mu.
func (l *forkLedger) waiting(cacheDir, principal string) (count int, bytes int64) {
	entries, _ := os.ReadDir(filepath.Join(cacheDir, workspacesDir))
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), forkPrefix) {
			continue
		}
		if c, ok := l.copying[e.Name()]; ok {
			if c.principal == principal {
				count, bytes = count+1, bytes+c.bytes
			}
			continue
		}
		root := filepath.Join(cacheDir, workspacesDir, e.Name())
		rec, err := keep.ReadRecord(root)
		if err != nil || rec.Principal != principal || !time.Now().Before(rec.HandoffUntil) {
			continue
		}
		count, bytes = count+1, bytes+keptDiskBytes(root)+treeBytes(filepath.Join(root, keptStoreDir))
	}
	return count, bytes
}

// forkDiskReserve is what forks leave free on the cache disk: a session's
// disk limit, which a new session needs there, and at least
// minForkDiskReserve.
func forkDiskReserve(cfg Config) int64 {
	return max(minForkDiskReserve, cfg.DiskBytes)
}
