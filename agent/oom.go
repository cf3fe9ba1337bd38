//go:build linux

package agent

import (
	"os"
	"strconv"
	"strings"

	"github.com/wink-mcp/wink-mcp/wire"
)

// The kernel's OOM killer ends a process of the container when its memory
// cgroup reaches the limit, and what the process's parent sees is a
// SIGKILL like any other (exit 137). The cgroup counts those kills
// (memory.events on cgroups v2, memory.oom_control on v1, each the
// container's own at these paths), so a count that rose while a command
// ran tells an OOM kill apart from a kill -9.
var (
	oomCountFiles  = []string{"/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"}
	memLimitFiles  = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}
	unlimitedBytes = int64(1) << 62 // cgroups v1 writes "no limit" as a number near 2^63
)

// oomKills returns how many processes the OOM killer has ended in the
// container's memory cgroup, or -1 when no cgroup file says.
func oomKills() int64 {
	for _, name := range oomCountFiles {
		b, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
				if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
					return n
				}
			}
		}
	}
	return -1
}

// memoryLimit returns the container's memory limit in bytes, 0 when it has
// none or no cgroup file says.
func memoryLimit() int64 {
	for _, name := range memLimitFiles {
		b, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n >= unlimitedBytes {
			return 0 // "max", or v1's "unlimited"
		}
		return n
	}
	return 0
}

// oomReport says what the memory limit did while a command ran: before is
// oomKills() from its start, exitCode how it ended, and agentKilled whether
// the agent itself stopped it (a timeout, a cancel, job action=signal). It
// returns nil when the limit killed nothing meanwhile.
func oomReport(before int64, exitCode int, agentKilled bool) *wire.OOM {
	if before < 0 {
		return nil
	}
	after := oomKills()
	if after <= before {
		return nil
	}
	return &wire.OOM{Kills: after - before, Killed: exitCode == 128+9 && !agentKilled, LimitBytes: memoryLimit()}
}
