package workspace

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/containers/podman/v5/libpod/define"
)

// ErrSettingsDrift is wrapped when a created container's effective settings
// differ from what was asked: something between the request and the runtime
// (a containers.conf, an image, a Podman bug) weakened them.
var ErrSettingsDrift = errors.New("the container's effective settings differ from those asked for")

// checkEffective compares a created container, as Podman inspects it, with
// the spec it was created from, and lists every difference that matters to
// the sandbox: capabilities, privilege, no-new-privileges, user, network,
// limits, and mounts (only those asked for; no volumes).
func checkEffective(spec containerSpec, data *define.InspectContainerData) error {
	if data == nil || data.Config == nil || data.HostConfig == nil {
		return fmt.Errorf("%w: Podman's inspection is incomplete", ErrSettingsDrift)
	}
	var drift []string
	want := func(ok bool, format string, args ...any) {
		if !ok {
			drift = append(drift, fmt.Sprintf(format, args...))
		}
	}
	hc := data.HostConfig
	want(len(data.EffectiveCaps) == 0, "effective capabilities %v, want none", data.EffectiveCaps)
	want(len(data.BoundingCaps) == 0, "bounding capabilities %v, want none", data.BoundingCaps)
	want(len(hc.CapAdd) == 0, "added capabilities %v, want none", hc.CapAdd)
	want(!hc.Privileged, "privileged, want unprivileged")
	want(slices.ContainsFunc(hc.SecurityOpt, func(o string) bool { return strings.HasPrefix(o, "no-new-privileges") }),
		"security options %v lack no-new-privileges", hc.SecurityOpt)
	want(data.Config.User == spec.User, "user %q, want %q", data.Config.User, spec.User)
	want(hc.NetworkMode == "none", "network mode %q, want none", hc.NetworkMode)
	if spec.limited("memory") {
		want(hc.Memory == spec.MemoryBytes, "memory limit %d, want %d", hc.Memory, spec.MemoryBytes)
		want(hc.MemorySwap == spec.MemoryBytes, "memory+swap limit %d, want %d (no swap)", hc.MemorySwap, spec.MemoryBytes)
	}
	if spec.limited("pids") {
		want(hc.PidsLimit == spec.PidsLimit, "pids limit %d, want %d", hc.PidsLimit, spec.PidsLimit)
	}
	if spec.limited("cpu") {
		want(hc.CpuQuota == cpuQuota(spec.CPUs), "CPU quota %d, want %d", hc.CpuQuota, cpuQuota(spec.CPUs))
		want(hc.CpuPeriod == cpuPeriod, "CPU period %d µs, want %d", hc.CpuPeriod, cpuPeriod)
		want(hc.CpuShares == cpuShares, "CPU shares %d, want %d", hc.CpuShares, cpuShares)
	}

	expected := map[string]bool{Root: true, AgentPath: false} // destination → writable
	for _, m := range spec.Mounts {
		expected[m.Destination] = !m.ReadOnly
	}
	for _, m := range data.Mounts {
		rw, ok := expected[m.Destination]
		switch {
		case m.Type == "volume":
			want(false, "a volume %q at %s, want none (an image's VOLUME?)", m.Name, m.Destination)
		case !ok:
			want(false, "an unexpected mount of %s at %s", m.Source, m.Destination)
		case m.RW && !rw:
			want(false, "%s is writable, want read-only", m.Destination)
		}
	}
	if len(drift) > 0 {
		return fmt.Errorf("%w: %s", ErrSettingsDrift, strings.Join(drift, "; "))
	}
	return nil
}
