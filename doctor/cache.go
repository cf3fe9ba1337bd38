package doctor

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/wink-mcp/wink-mcp/egress"
)

// egressCache checks the artefact cache (--egress-cache): its hosts, that
// its directory is writable, and what it holds against its bound.
func (d *doctor) egressCache(context.Context) Result {
	c := d.cfg
	if !c.EgressCacheOn() {
		return Result{Status: OK, Detail: "off: every session downloads its own artefacts (--egress-cache)"}
	}
	dir := c.EgressCacheDir
	if dir == "" {
		dir = filepath.Join(c.CacheDir, egress.CacheDirName)
	}
	hosts := "hosts " + strings.Join(c.EgressCache, ", ")
	if len(c.EgressCache) == 0 {
		hosts = "no hosts of its own"
	}
	for _, p := range c.Profiles.All() {
		if len(p.EgressCache) > 0 {
			hosts += fmt.Sprintf(", profile %s: %s", p.Name, strings.Join(p.EgressCache, ", "))
		}
	}
	if err := writable(dir); err != nil {
		return Result{Status: Fail, Detail: fmt.Sprintf("%s; %s is not writable: %v", hosts, dir, err), Fix: "give --egress-cache-dir a directory this user can write"}
	}
	bytes, entries, err := egress.CacheUsage(dir)
	if err != nil {
		return Result{Status: Fail, Detail: hosts + "; " + err.Error(), Fix: "give --egress-cache-dir a directory this user can read"}
	}
	r := Result{Status: OK, Detail: fmt.Sprintf("%s; %s writable, %d entries, %d MiB of %d MiB (--egress-cache-size)", hosts, dir, entries, bytes>>20, c.EgressCacheBytes>>20)}
	free, err := d.host.freeBytes(dir)
	grow := max(c.EgressCacheBytes-bytes, 0)
	switch {
	case err != nil:
		r.Detail += fmt.Sprintf("; free space unknown: %v", err)
	case free < uint64(grow):
		r.Status, r.Detail = Warn, r.Detail+fmt.Sprintf("; its disk has %d MiB free, less than the %d MiB the cache may still grow by: once the disk is full it stores no new entry (the kept ones are still served)", free>>20, grow>>20)
		r.Fix = "free space there, lower --egress-cache-size, or move --egress-cache-dir to a larger disk"
	default:
		r.Detail += fmt.Sprintf(", %d MiB free on its disk", free>>20)
	}
	return r
}
