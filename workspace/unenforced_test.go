package workspace

import (
	"errors"
	"strings"
	"testing"

	"github.com/containers/podman/v5/libpod/define"
)

func TestUnlimitable(t *testing.T) {
	for _, tc := range []struct {
		rootless  bool
		version   string
		delegated []string
		want      string
	}{
		{false, "v1", nil, ""},
		{false, "v2", nil, ""},
		{true, "v1", []string{"cpu", "memory", "pids"}, "memory,cpu,pids"},
		{true, "v2", []string{"cpu", "memory", "pids", "io"}, ""},
		{true, "v2", []string{"memory", "pids"}, "cpu"},
		{true, "v2", nil, "memory,cpu,pids"},
	} {
		if got := unlimitable(tc.rootless, tc.version, tc.delegated); got != tc.want {
			t.Errorf("unlimitable(%v, %s, %v) = %q, want %q", tc.rootless, tc.version, tc.delegated, got, tc.want)
		}
	}
}

// Rootless Podman on cgroups v1 makes containers without limits: each is
// refused with the reason and every fix, unless the configuration accepts
// it, and then it is made without those limits and says so.
func TestUnenforceableLimitsAreRefusedUnlessAllowed(t *testing.T) {
	v1 := hostFacts{Rootless: true, Cgroups: "v1", Unlimitable: "memory,cpu,pids", Markers: "kernel"}
	m, eng, _ := newTestManager(t, nil)
	eng.mu.Lock()
	eng.host = v1
	eng.mu.Unlock()
	s, _ := m.Session("refused")
	_, err := s.Start(ctx)
	if !errors.Is(err, ErrLimitsUnenforceable) {
		t.Fatalf("Start = %v, want ErrLimitsUnenforceable", err)
	}
	for _, part := range []string{"memory, CPU, process count", "cgroups v1", "systemd.unified_cgroup_hierarchy=1", "rootful", "--allow-unenforced-limits"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("the refusal %q does not mention %q", err, part)
		}
	}
	if eng.count() != 0 {
		t.Error("a container was made")
	}

	m, eng, logs := newTestManager(t, func(c *Config) { c.AllowUnenforcedLimits = true })
	eng.mu.Lock()
	eng.host = v1
	eng.mu.Unlock()
	if err := m.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	if !logs.contains("RESOURCE LIMITS ARE NOT ENFORCED") {
		t.Error("the start does not warn that the limits are off")
	}
	s, _ = m.Session("allowed")
	if _, err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if got := s.Info().Unenforced; got != "memory, CPU, process count" {
		t.Errorf("Info().Unenforced = %q", got)
	}
	eng.mu.Lock()
	spec := eng.containers[s.Info().Name].spec
	eng.mu.Unlock()
	if spec.Unlimited != v1.Unlimitable || spec.NofileLimit == 0 || spec.NprocLimit == 0 || spec.TmpBytes == 0 {
		t.Errorf("spec: unlimited %q, nofile %d, nproc %d, tmp %d; want the cgroup limits off and the rest on",
			spec.Unlimited, spec.NofileLimit, spec.NprocLimit, spec.TmpBytes)
	}
}

// A container without the cgroup limits gets no resource limits in its
// Podman spec, and is checked for everything else.
func TestSpecWithoutCgroupLimits(t *testing.T) {
	spec := containerSpec{User: "1000:1000", WorkspaceDir: "/c/w", AgentBinary: "/bin/wink", Limits: DefaultConfig().Limits, Unlimited: "memory,cpu,pids"}
	r := podmanSpec(spec).ResourceLimits
	if r.Memory != nil || r.CPU != nil || r.Pids != nil {
		t.Errorf("limits asked for that the host drops: %+v", r)
	}
	if rl := podmanSpec(spec).Rlimits; len(rl) != 2 {
		t.Errorf("rlimits %v, want nofile and nproc", rl)
	}
	d := inspected(spec)
	d.HostConfig.Memory, d.HostConfig.MemorySwap, d.HostConfig.PidsLimit = 0, 0, 0
	d.HostConfig.CpuQuota, d.HostConfig.CpuPeriod, d.HostConfig.CpuShares = 0, 0, 0
	if err := checkEffective(spec, d); err != nil {
		t.Errorf("a container without the limits it was allowed to lack was refused: %v", err)
	}
	for name, mutate := range map[string]func(d *define.InspectContainerData){
		"capabilities": func(d *define.InspectContainerData) { d.EffectiveCaps = []string{"CAP_CHOWN"} },
		"user":         func(d *define.InspectContainerData) { d.Config.User = "0:0" },
		"network":      func(d *define.InspectContainerData) { d.HostConfig.NetworkMode = "bridge" },
		"no-new-privileges": func(d *define.InspectContainerData) {
			d.HostConfig.SecurityOpt = nil
		},
	} {
		d := inspected(spec)
		mutate(d)
		if err := checkEffective(spec, d); !errors.Is(err, ErrSettingsDrift) {
			t.Errorf("%s drift without cgroup limits: %v, want it refused", name, err)
		}
	}
	partial := spec
	partial.Unlimited = "cpu"
	d = inspected(partial)
	d.HostConfig.Memory = 0
	if err := checkEffective(partial, d); !errors.Is(err, ErrSettingsDrift) {
		t.Errorf("only the CPU limit is off, yet a missing memory limit passed: %v", err)
	}
}
