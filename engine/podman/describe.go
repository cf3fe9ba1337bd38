//go:build containers_image_openpgp

package podman

import (
	"context"
	"fmt"
	"strings"

	"github.com/containers/podman/v5/pkg/bindings"
	"github.com/containers/podman/v5/pkg/bindings/system"

	"github.com/wink-mcp/wink-mcp/engine"
)

// Describe connects to the service and describes it.
func (e *Engine) Describe(ctx context.Context) (_ engine.Description, err error) {
	c, end, err := e.call(ctx)
	if err != nil {
		return engine.Description{}, err
	}
	defer end(&err)
	info, err := system.Info(c, nil)
	if err != nil {
		return engine.Description{}, fmt.Errorf("asking the Podman service at %s for its info: %w", e.uri, err)
	}
	out := engine.Description{
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
