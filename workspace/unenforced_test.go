package workspace

import (
	"errors"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/engine"
)

// Rootless Podman on cgroups v1 makes containers without limits: each is
// refused with the reason and every fix, unless the configuration accepts
// it, and then it is made without those limits and says so.
func TestUnenforceableLimitsAreRefusedUnlessAllowed(t *testing.T) {
	v1 := engine.HostFacts{Rootless: true, Cgroups: "v1", Unlimitable: "memory,cpu,pids", Markers: "kernel"}
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
