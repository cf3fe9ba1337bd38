//go:build containers_image_openpgp

package podman

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/containers/podman/v5/libpod/define"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/wire"
)

// testLimits are the limits of the specs tested here.
var testLimits = engine.Limits{MemoryBytes: 1 << 30, CPUs: 1, PidsLimit: 256, TmpBytes: 256 << 20, NofileLimit: 4096, NprocLimit: 4096}

// inspected is what Podman 4.3 reports for a container made from spec, as
// recorded from a real one.
func inspected(spec engine.Spec) *define.InspectContainerData {
	return &define.InspectContainerData{
		Config: &define.InspectContainerConfig{User: spec.User},
		HostConfig: &define.InspectContainerHostConfig{
			SecurityOpt: []string{"no-new-privileges"}, NetworkMode: "none",
			Memory: spec.MemoryBytes, MemorySwap: spec.MemoryBytes, PidsLimit: spec.PidsLimit, CpuQuota: cpuQuota(spec.CPUs),
			CpuPeriod: cpuPeriod, CpuShares: cpuShares,
		},
		Mounts: []define.InspectMount{
			{Type: "bind", Source: spec.WorkspaceDir, Destination: spec.Root, RW: true},
			{Type: "bind", Source: spec.AgentBinary, Destination: engine.AgentPath},
		},
	}
}

func TestEffectiveSettingsDriftIsRefused(t *testing.T) {
	spec := engine.Spec{User: "1000:1000", Root: "/workspace", WorkspaceDir: "/c/w", AgentBinary: "/bin/wink", Limits: testLimits}
	if err := checkEffective(spec, "", inspected(spec)); err != nil {
		t.Fatalf("the settings asked for were refused: %v", err)
	}
	drifts := map[string]func(d *define.InspectContainerData){
		"effective capabilities": func(d *define.InspectContainerData) { d.EffectiveCaps = []string{"CAP_CHOWN"} },
		"bounding capabilities":  func(d *define.InspectContainerData) { d.BoundingCaps = []string{"CAP_SYS_ADMIN"} },
		"added capabilities":     func(d *define.InspectContainerData) { d.HostConfig.CapAdd = []string{"NET_RAW"} },
		"privileged":             func(d *define.InspectContainerData) { d.HostConfig.Privileged = true },
		"no-new-privileges":      func(d *define.InspectContainerData) { d.HostConfig.SecurityOpt = nil },
		"user":                   func(d *define.InspectContainerData) { d.Config.User = "0:0" },
		"network mode":           func(d *define.InspectContainerData) { d.HostConfig.NetworkMode = "bridge" },
		"memory limit":           func(d *define.InspectContainerData) { d.HostConfig.Memory = 0 },
		"memory+swap":            func(d *define.InspectContainerData) { d.HostConfig.MemorySwap = -1 },
		"pids limit":             func(d *define.InspectContainerData) { d.HostConfig.PidsLimit = 0 },
		"CPU quota":              func(d *define.InspectContainerData) { d.HostConfig.CpuQuota = 0 },
		"CPU period":             func(d *define.InspectContainerData) { d.HostConfig.CpuPeriod = 100_000 },
		"CPU shares":             func(d *define.InspectContainerData) { d.HostConfig.CpuShares = 1024 },
		"a volume": func(d *define.InspectContainerData) {
			d.Mounts = append(d.Mounts, define.InspectMount{Type: "volume", Name: "anon", Destination: "/data", RW: true})
		},
		"unexpected mount": func(d *define.InspectContainerData) {
			d.Mounts = append(d.Mounts, define.InspectMount{Type: "bind", Source: "/", Destination: "/host"})
		},
		"is writable": func(d *define.InspectContainerData) { d.Mounts[1].RW = true },
	}
	for name, mutate := range drifts {
		d := inspected(spec)
		mutate(d)
		err := checkEffective(spec, "", d)
		if !errors.Is(err, engine.ErrSettingsDrift) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

// The tunnel's socket directory must be mounted exactly: that directory,
// read-only, at its place, and nothing else there.
func TestEffectiveTunnelMountIsExact(t *testing.T) {
	spec := engine.Spec{User: "1000:1000", Root: "/workspace", WorkspaceDir: "/c/w", AgentBinary: "/bin/wink", Limits: testLimits}
	const dir = "/cache/tunnels/0123456789abcdef"
	mounted := func(m define.InspectMount) *define.InspectContainerData {
		d := inspected(spec)
		d.Mounts = append(d.Mounts, m)
		return d
	}
	if err := checkEffective(spec, dir, mounted(define.InspectMount{Type: "bind", Source: dir, Destination: wire.TunnelSocketDir})); err != nil {
		t.Fatalf("the tunnel's mount as asked was refused: %v", err)
	}
	for what, d := range map[string]*define.InspectContainerData{
		"missing":                inspected(spec),
		"writable":               mounted(define.InspectMount{Type: "bind", Source: dir, Destination: wire.TunnelSocketDir, RW: true}),
		"another directory":      mounted(define.InspectMount{Type: "bind", Source: "/cache/tunnels/fedcba9876543210", Destination: wire.TunnelSocketDir}),
		"a volume":               mounted(define.InspectMount{Type: "volume", Name: "v", Source: dir, Destination: wire.TunnelSocketDir}),
		"mounted without asking": nil,
	} {
		check := dir
		if d == nil {
			check, d = "", mounted(define.InspectMount{Type: "bind", Source: dir, Destination: wire.TunnelSocketDir})
		}
		if err := checkEffective(spec, check, d); !errors.Is(err, engine.ErrSettingsDrift) {
			t.Errorf("%s: got %v, want a drift", what, err)
		}
	}
	s := podmanSpec(spec, dir)
	found := false
	for _, m := range s.Mounts {
		if m.Destination == wire.TunnelSocketDir {
			found = m.Source == dir && slices.Contains(m.Options, "ro") && slices.Contains(m.Options, "noexec")
		}
	}
	if !found {
		t.Errorf("the spec's tunnel mount: %+v", s.Mounts)
	}
}
