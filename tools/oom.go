package tools

import (
	"fmt"
	"strconv"

	"github.com/wink-mcp/wink-mcp/wire"
)

// oomNote says in a sentence what the workspace's memory limit did while
// a command ran (see wire.OOM), "" when it killed nothing: a model that
// only sees exit 137 cannot tell the limit from a kill -9.
func oomNote(o *wire.OOM) string {
	if o == nil || o.Kills <= 0 {
		return ""
	}
	limit := "the workspace's memory limit"
	if o.LimitBytes > 0 {
		limit += " of " + wholeBytes(o.LimitBytes)
	}
	if o.Killed {
		return "killed by " + limit + " (out of memory)"
	}
	processes := "1 process"
	if o.Kills > 1 {
		processes = strconv.FormatInt(o.Kills, 10) + " processes"
	}
	return fmt.Sprintf("%s killed %s while it ran (out of memory)", limit, processes)
}

// wholeBytes writes n in the largest binary unit that divides it, as a
// limit is given (1 GiB, 512 MiB), else in bytes.
func wholeBytes(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
