package podman

import (
	"context"
	"fmt"
	"strings"

	"github.com/containers/podman/v5/pkg/bindings"
	"github.com/containers/podman/v5/pkg/bindings/system"
)

// Description is what a Podman service says about itself.
type Description struct {
	// URI is the service that answered.
	URI string
	// Version and APIVersion are the service's Podman and REST API versions.
	Version, APIVersion string
	// DefaultRuntime is the OCI runtime used when none is named.
	DefaultRuntime string
	// CgroupsVersion is "v1" or "v2" as the service sees the host.
	CgroupsVersion string
	// Rootless is true for a service running without root.
	Rootless bool
	// Remote is true when the service is not on this host's Unix socket.
	Remote bool
	// Unlimitable lists, comma-separated, the cgroup controllers a limit
	// needs that the service's containers cannot have (engine.HostFacts).
	Unlimitable string
	// GraphDriver is the storage driver of its images ("overlay", "vfs").
	GraphDriver string
}

// Describe connects to the service and describes it.
func (e *Engine) Describe(ctx context.Context) (_ Description, err error) {
	c, end, err := e.call(ctx)
	if err != nil {
		return Description{}, err
	}
	defer end(&err)
	info, err := system.Info(c, nil)
	if err != nil {
		return Description{}, fmt.Errorf("asking the Podman service at %s for its info: %w", e.uri, err)
	}
	out := Description{
		URI:        e.uri,
		Version:    info.Version.Version,
		APIVersion: bindings.ServiceVersion(c).String(),
		Remote:     !strings.HasPrefix(e.uri, "unix://"),
	}
	if h := info.Host; h != nil {
		out.CgroupsVersion, out.Rootless = h.CgroupsVersion, h.Security.Rootless
		if h.OCIRuntime != nil {
			out.DefaultRuntime = h.OCIRuntime.Name
		}
		out.Unlimitable = unlimitable(out.Rootless, h.CgroupsVersion, h.CgroupControllers)
	}
	if info.Store != nil {
		out.GraphDriver = info.Store.GraphDriverName
	}
	return out, nil
}
