package workspace

import (
	"errors"
	"fmt"
	"strings"

	"github.com/wink-mcp/wink-mcp/engine"
)

// ErrLimitsUnenforceable is wrapped when the service cannot enforce the
// memory, CPU or process limits and Config.AllowUnenforcedLimits is off.
var ErrLimitsUnenforceable = errors.New("the Podman service cannot enforce the container limits")

// limitNames names what each of limitControllers limits.
var limitNames = map[string]string{"cpu": "CPU", "memory": "memory", "pids": "process count"}

// Unenforced says what the service cannot limit and why: Limits and Why
// are empty when it enforces every limit.
type Unenforced struct {
	// Limits names the limits, e.g. "memory, CPU, process count".
	Limits string
	// Why is the reason, and Fix how to get the limits enforced.
	Why, Fix string
}

// AllowUnenforced is the last way out of a host that cannot enforce the
// limits, for the end of a fix.
const AllowUnenforced = "or pass --allow-unenforced-limits (WINK_ALLOW_UNENFORCED_LIMITS) to run without them " +
	"(docs/where-it-runs.md says what a memory or fork bomb can then do)"

// unenforced describes the limits h's containers cannot have.
func unenforced(h engine.HostFacts) Unenforced {
	if h.Unlimitable == "" {
		return Unenforced{}
	}
	var names []string
	for _, c := range strings.Split(h.Unlimitable, ",") {
		names = append(names, limitNames[c])
	}
	u := Unenforced{Limits: strings.Join(names, ", ")}
	if h.Cgroups != "v2" {
		u.Why = "rootless Podman on cgroups v1 ignores every container resource limit " +
			`("Resource limits are not supported and ignored on cgroups V1 rootless systems")`
		u.Fix = "boot the host with the unified cgroup hierarchy (systemd.unified_cgroup_hierarchy=1 on the kernel command line) " +
			"and keep rootless Podman, or run wink-mcp as root against rootful Podman"
		return u
	}
	u.Why = fmt.Sprintf("systemd does not delegate the %s cgroup controller(s) to this user, so rootless Podman cannot set them", h.Unlimitable)
	u.Fix = "delegate them (a drop-in for user@.service with Delegate=memory cpu pids, then log in again), " +
		"or run wink-mcp as root against rootful Podman"
	return u
}

// limitsError is the error of a container refused because h cannot
// enforce its limits, or nil.
func limitsError(h engine.HostFacts, allow bool) error {
	u := unenforced(h)
	if u.Limits == "" || allow {
		return nil
	}
	return fmt.Errorf("%w: its containers would have no %s limit: %s. Fix: %s, %s", ErrLimitsUnenforceable, u.Limits, u.Why, u.Fix, AllowUnenforced)
}
