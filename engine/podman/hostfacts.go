//go:build containers_image_openpgp

package podman

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/containers/podman/v5/pkg/bindings/system"

	"github.com/wink-mcp/wink-mcp/changes"
	"github.com/wink-mcp/wink-mcp/engine"
)

// The Podman service answers GET /libpod/info, the one question whose
// answer every container spec depends on, in 0.5-1 s (it runs conmon, the
// OCI runtime and more to describe them), while a whole container takes
// about as long again. So each process asks it once, in the background as
// it starts, and records the answer under the cache directory; the next
// process makes its first container from the recorded answer while it asks
// again, and makes that container again in the rare case the answers
// differ, before any call uses it.

// hostFactsFile records the answers, per service URI, under the cache directory.
const hostFactsFile = "podman-hosts.json"

// recordedHosts is the content of hostFactsFile. Facts recorded before the
// host last booted are not used: SELinux and the service may have changed.
type recordedHosts struct {
	BootID   string                      `json:"boot_id"`
	Services map[string]engine.HostFacts `json:"services"`
}

// bootID identifies this boot of the host, or is "" where unknown.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// readRecordedFacts returns the facts recorded in cacheDir for uri in this boot.
func readRecordedFacts(cacheDir, uri string) (engine.HostFacts, bool) {
	b, err := os.ReadFile(filepath.Join(cacheDir, hostFactsFile))
	if err != nil {
		return engine.HostFacts{}, false
	}
	var rec recordedHosts
	if json.Unmarshal(b, &rec) != nil || rec.BootID == "" || rec.BootID != bootID() {
		return engine.HostFacts{}, false
	}
	h, ok := rec.Services[uri]
	if _, err := changes.ParseMarkers(string(h.Markers)); err != nil {
		return engine.HostFacts{}, false
	}
	return h, ok
}

// recordFacts records h as uri's facts in cacheDir, replacing the file
// whole (writeFile) so that a concurrent reader, another process
// sharing the cache directory, sees the old content or the new.
func recordFacts(cacheDir, uri string, h engine.HostFacts) error {
	id := bootID()
	if id == "" {
		return nil
	}
	path := filepath.Join(cacheDir, hostFactsFile)
	var rec recordedHosts
	if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &rec) == nil && rec.BootID == id {
		if old, ok := rec.Services[uri]; ok && old == h {
			return nil
		}
	} else {
		rec = recordedHosts{BootID: id}
	}
	if rec.Services == nil {
		rec.Services = map[string]engine.HostFacts{}
	}
	rec.Services[uri] = h
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return writeFile(path, b)
}

// Host returns the service's host facts: the settled answer of this
// process when it has one, else the one recorded by an earlier process
// (settled is then false), else it asks.
func (e *Engine) Host(ctx context.Context) (_ engine.HostFacts, settled bool, err error) {
	if h := e.knownFacts(); h != nil {
		return *h, true, nil
	}
	if _, err := e.connect(ctx); err != nil {
		return engine.HostFacts{}, false, err
	}
	if h, ok := readRecordedFacts(e.cacheDir, e.uri); ok {
		return h, false, nil
	}
	h, err := e.SettledHost(ctx)
	return h, true, err
}

// SettledHost asks the service about its host, once per process: callers
// that come while it is being asked wait for that answer (bounded by the
// API timeout). The answer is recorded for the next process.
func (e *Engine) SettledHost(ctx context.Context) (_ engine.HostFacts, err error) {
	if h := e.knownFacts(); h != nil {
		return *h, nil
	}
	e.asking.Lock()
	defer e.asking.Unlock()
	if h := e.knownFacts(); h != nil {
		return *h, nil
	}
	c, end, err := e.call(ctx)
	if err != nil {
		return engine.HostFacts{}, err
	}
	defer end(&err)
	info, err := system.Info(c, nil)
	if err != nil {
		return engine.HostFacts{}, fmt.Errorf("asking the Podman service about its host: %w", err)
	}
	h := &engine.HostFacts{Markers: changes.KernelMarkers}
	if info.Host != nil {
		h.Rootless, h.SELinux = info.Host.Security.Rootless, info.Host.Security.SELinuxEnabled
		h.Cgroups, h.Arch = info.Host.CgroupsVersion, info.Host.Arch
		h.Unlimitable = unlimitable(h.Rootless, h.Cgroups, info.Host.CgroupControllers)
	}
	if h.Rootless {
		// Rootless overlays are fuse-overlayfs when storage names a mount
		// program, else the kernel's, mounted with userxattr.
		h.Markers = changes.UserxattrMarkers
		if info.Store != nil && info.Store.GraphOptions["overlay.mount_program"] != nil {
			h.Markers = changes.FuseMarkers
		}
	}
	e.mu.Lock()
	e.host = h
	uri := e.uri
	e.mu.Unlock()
	if err := recordFacts(e.cacheDir, uri, *h); err != nil {
		e.log.Warn("recording the Podman service's host facts for the next process", "err", err)
	}
	return *h, nil
}

func (e *Engine) knownFacts() *engine.HostFacts {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.host
}

// limitControllers are the cgroup controllers the memory, CPU and process
// limits need.
var limitControllers = []string{"memory", "cpu", "pids"}

// unlimitable lists the limitControllers a service's containers cannot
// have. Rootful Podman has them all; rootless Podman has none on cgroups
// v1 ("Resource limits are not supported and ignored on cgroups V1
// rootless systems") and, on v2, those systemd delegates to the user.
func unlimitable(rootless bool, version string, delegated []string) string {
	if !rootless {
		return ""
	}
	var missing []string
	for _, c := range limitControllers {
		if version != "v2" || !slices.Contains(delegated, c) {
			missing = append(missing, c)
		}
	}
	return strings.Join(missing, ",")
}
