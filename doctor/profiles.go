package doctor

import (
	"context"
	"fmt"
	"strings"

	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/profiles"
)

// profiles says which profiles the file holds and whether their images
// are built; the file itself was read and checked with the flags, whose
// errors name its line.
func (d *doctor) profiles(ctx context.Context) Result {
	f := d.cfg.Profiles
	if f == nil {
		return Result{Status: OK, Detail: "none (--profiles FILE offers toolchains sessions choose)"}
	}
	if d.info == nil {
		return skipped("the service")
	}
	images, err := d.svc.ProfileImages(ctx)
	if err != nil {
		return Result{Status: Warn, Detail: fmt.Sprintf("%s is valid, but its images cannot be listed: %v", f.Path, err), Fix: "see the service check"}
	}
	var parts, unbuilt []string
	for _, pi := range images {
		switch {
		case pi.Base == "":
			parts = append(parts, pi.Profile+" (base image missing: pulled on first use)")
		case pi.Image == "":
			parts = append(parts, pi.Profile+" ("+pi.Base+", no setup)")
		case pi.Built:
			parts = append(parts, fmt.Sprintf("%s (built, %s)", pi.Profile, checkpoints.FormatBytes(pi.Size)))
		default:
			parts = append(parts, pi.Profile+" (not built)")
			unbuilt = append(unbuilt, pi.Profile)
		}
	}
	detail := fmt.Sprintf("%s is valid: %s", f.Path, strings.Join(parts, "; "))
	if declared := declaredServices(f.Names(), f.Profiles); declared != "" {
		detail += "; services declared (valid, started by workspace_service or, marked, with the workspace): " + declared
	}
	if len(unbuilt) > 0 {
		return Result{Status: Warn, Detail: detail, Fix: "the first session of " + strings.Join(unbuilt, ", ") +
			" waits for its setup; build ahead with `wink-mcp profiles build`"}
	}
	return Result{Status: OK, Detail: detail}
}

// declaredServices lists, profile by profile, the services the profiles
// declare, "" for none.
func declaredServices(names []string, all map[string]*profiles.Profile) string {
	var parts []string
	for _, name := range names {
		var svcs []string
		for _, s := range all[name].Services {
			var marks string
			if s.User != "" {
				marks += ", as " + s.User
			}
			if len(s.Egress) > 0 {
				marks += fmt.Sprintf(", egress %v", s.Egress)
			}
			if s.Autostart {
				marks += ", starts with the workspace"
			}
			svcs = append(svcs, fmt.Sprintf("%s (%s, ports %v%s)", s.Name, s.Profile, s.Ports, marks))
		}
		if len(svcs) > 0 {
			parts = append(parts, name+": "+strings.Join(svcs, ", "))
		}
	}
	return strings.Join(parts, "; ")
}
