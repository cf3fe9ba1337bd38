//go:build containers_image_openpgp

package podman

import (
	"fmt"
	"slices"
	"strings"

	"github.com/containers/podman/v5/libpod/define"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/wire"
)

// checkEffective compares a created container, as Podman inspects it, with
// the spec it was created from, and lists every difference that matters to
// the sandbox: capabilities, privilege, no-new-privileges, user, network,
// limits, and mounts (only those asked for, the tunnel's socket directory
// tunnelDir, read-only, when not ""; no volumes).
func checkEffective(spec engine.Spec, tunnelDir string, data *define.InspectContainerData) error {
	if data == nil || data.Config == nil || data.HostConfig == nil {
		return fmt.Errorf("%w: Podman's inspection is incomplete", engine.ErrSettingsDrift)
	}
	var drift []string
	want := func(ok bool, format string, args ...any) {
		if !ok {
			drift = append(drift, fmt.Sprintf(format, args...))
		}
	}
	hc := data.HostConfig
	want(sameCaps(data.EffectiveCaps, spec.Caps), "effective capabilities %v, want %s", data.EffectiveCaps, capsWanted(spec.Caps))
	want(sameCaps(data.BoundingCaps, spec.Caps), "bounding capabilities %v, want %s", data.BoundingCaps, capsWanted(spec.Caps))
	want(!slices.ContainsFunc(hc.CapAdd, func(c string) bool { return !slices.Contains(spec.Caps, c) }),
		"added capabilities %v, want at most %s", hc.CapAdd, capsWanted(spec.Caps))
	want(!hc.Privileged, "privileged, want unprivileged")
	want(slices.ContainsFunc(hc.SecurityOpt, func(o string) bool { return strings.HasPrefix(o, "no-new-privileges") }),
		"security options %v lack no-new-privileges", hc.SecurityOpt)
	want(data.Config.User == spec.User, "user %q, want %q", data.Config.User, spec.User)
	want(hc.NetworkMode == "none", "network mode %q, want none", hc.NetworkMode)
	for k, v := range spec.Env {
		// Named, not shown: values may be secrets (--env-pass).
		want(slices.Contains(data.Config.Env, k+"="+v), "environment lacks %s as asked", k)
	}
	if spec.Limited("memory") {
		want(hc.Memory == spec.MemoryBytes, "memory limit %d, want %d", hc.Memory, spec.MemoryBytes)
		want(hc.MemorySwap == spec.MemoryBytes, "memory+swap limit %d, want %d (no swap)", hc.MemorySwap, spec.MemoryBytes)
	}
	if spec.Limited("pids") {
		want(hc.PidsLimit == spec.PidsLimit, "pids limit %d, want %d", hc.PidsLimit, spec.PidsLimit)
	}
	if spec.Limited("cpu") {
		want(hc.CpuQuota == cpuQuota(spec.CPUs), "CPU quota %d, want %d", hc.CpuQuota, cpuQuota(spec.CPUs))
		want(hc.CpuPeriod == cpuPeriod, "CPU period %d µs, want %d", hc.CpuPeriod, cpuPeriod)
		want(hc.CpuShares == cpuShares, "CPU shares %d, want %d", hc.CpuShares, cpuShares)
	}

	expected := map[string]bool{} // destination → writable
	if !spec.WorkspaceInContainer {
		expected[spec.Root] = true
	}
	if !spec.CopyAgent {
		expected[engine.AgentPath] = false
	}
	for _, m := range spec.Mounts {
		expected[m.Destination] = !m.ReadOnly
	}
	if tunnelDir != "" {
		expected[wire.TunnelSocketDir] = false
	}
	tunnelMounted := false
	for _, m := range data.Mounts {
		rw, ok := expected[m.Destination]
		switch {
		case m.Type == "volume" && (m.Destination != spec.Root || m.Name != spec.WorkspaceVolume || spec.WorkspaceVolume == ""):
			want(false, "a volume %q at %s, want none (an image's VOLUME?)", m.Name, m.Destination)
		case m.Type != "volume" && m.Destination == spec.Root && spec.WorkspaceVolume != "":
			want(false, "%s is a %s mount of %s, want the volume %s", m.Destination, m.Type, m.Source, spec.WorkspaceVolume)
		case !ok:
			want(false, "an unexpected mount of %s at %s", m.Source, m.Destination)
		case tunnelDir != "" && m.Destination == wire.TunnelSocketDir:
			tunnelMounted = true
			want(m.Type == "bind" && m.Source == tunnelDir && !m.RW, "%s is a %s mount of %s (writable %v), want the tunnel's directory %s, read-only",
				m.Destination, m.Type, m.Source, m.RW, tunnelDir)
		case m.RW && !rw:
			want(false, "%s is writable, want read-only", m.Destination)
		}
	}
	want(tunnelDir == "" || tunnelMounted, "the tunnel's directory %s is not mounted at %s", tunnelDir, wire.TunnelSocketDir)
	if len(drift) > 0 {
		return fmt.Errorf("%w: %s", engine.ErrSettingsDrift, strings.Join(drift, "; "))
	}
	return nil
}

// sameCaps says whether two capability lists hold the same capabilities.
func sameCaps(got, want []string) bool {
	g, w := slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
	return slices.Equal(slices.Compact(g), slices.Compact(w))
}

// capsWanted names a wanted capability list in a message.
func capsWanted(caps []string) string {
	if len(caps) == 0 {
		return "none"
	}
	return strings.Join(caps, ",")
}
