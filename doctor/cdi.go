package doctor

import (
	"context"
	"fmt"
	"strings"

	"github.com/wink-mcp/wink-mcp/hostcdi"
)

// cdi says which CDI specs this machine has (hostcdi.Dirs), the devices
// they name, and which device of --cdi-device or a profile's cdi_devices
// none of them names.
func (d *doctor) cdi(context.Context) Result {
	specs := hostcdi.Scan(hostcdi.Dirs)
	var have, bad []string
	for _, s := range specs {
		if s.Err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", s.File, s.Err))
			continue
		}
		names := hostcdi.Names([]hostcdi.Spec{s})
		have = append(have, fmt.Sprintf("%s (%s)", s.File, strings.Join(names, ", ")))
	}
	var missing []string
	for _, name := range d.cfg.CDIDevices {
		if _, ok := hostcdi.Find(specs, name); !ok {
			missing = append(missing, "--cdi-device "+name)
		}
	}
	for _, p := range d.cfg.Profiles.All() {
		for _, name := range p.CDIDevices {
			if _, ok := hostcdi.Find(specs, name); !ok {
				missing = append(missing, fmt.Sprintf("profile %q's %s", p.Name, name))
			}
		}
	}
	found := "no CDI specs in " + strings.Join(hostcdi.Dirs, " or ")
	if len(have) > 0 {
		found = "CDI specs: " + strings.Join(have, "; ")
	}
	if len(bad) > 0 {
		found += "; unreadable: " + strings.Join(bad, "; ")
	}
	switch {
	case len(missing) > 0:
		return Result{Status: Fail, Detail: found + "; no spec names " + strings.Join(missing, ", "),
			Fix: "install the vendor's CDI spec (for NVIDIA: nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml), or fix the name"}
	case len(d.cfg.CDIDevices) > 0:
		return Result{Status: OK, Detail: found + "; the sessions get " + strings.Join(d.cfg.CDIDevices, ", ")}
	case len(bad) > 0:
		return Result{Status: Warn, Detail: found, Fix: "fix or remove the unreadable spec files"}
	}
	return Result{Status: OK, Detail: found + "; no --cdi-device asked for"}
}
