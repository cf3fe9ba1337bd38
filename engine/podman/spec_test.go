//go:build containers_image_openpgp

package podman

import (
	"errors"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/containers/podman/v5/libpod/define"
	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/wink-mcp/wink-mcp/engine"
)

func TestPodmanSpecHardening(t *testing.T) {
	s := podmanSpec(engine.Spec{
		Name: "wink-x", Image: "img", User: "65534:65534", Root: "/workspace", WorkspaceDir: "/cache/ws", AgentBinary: "/bin/wink-mcp",
		Limits: engine.Limits{MemoryBytes: 1 << 30, CPUs: 1.5, PidsLimit: 256, TmpBytes: 256 << 20, NofileLimit: 4096, NprocLimit: 4096},
	}, "")
	if s.NetNS.NSMode != "none" || !slices.Equal(s.CapDrop, []string{"ALL"}) || s.NoNewPrivileges == nil || !*s.NoNewPrivileges {
		t.Errorf("network %q, cap drop %v, no-new-privileges %v", s.NetNS.NSMode, s.CapDrop, s.NoNewPrivileges)
	}
	if s.User != "65534:65534" || s.WorkDir != "/workspace" || !slices.Equal(s.Entrypoint, []string{engine.AgentPath}) {
		t.Errorf("user %q workdir %q entrypoint %v", s.User, s.WorkDir, s.Entrypoint)
	}
	r := s.ResourceLimits
	if *r.Memory.Limit != 1<<30 || *r.Memory.Swap != 1<<30 || *r.CPU.Quota != 15_000 || *r.CPU.Period != 10_000 || *r.CPU.Shares != 128 || r.Pids.Limit != 256 {
		t.Errorf("limits: memory %d swap %d quota %d period %d shares %d pids %d", *r.Memory.Limit, *r.Memory.Swap, *r.CPU.Quota, *r.CPU.Period, *r.CPU.Shares, r.Pids.Limit)
	}
	mounts := map[string][]string{}
	for _, m := range s.Mounts {
		mounts[m.Destination] = append([]string{m.Type, m.Source}, m.Options...)
	}
	if got := mounts["/workspace"]; !slices.Contains(got, "/cache/ws") || !slices.Contains(got, "rw") {
		t.Errorf("workspace mount %v", got)
	}
	if got := mounts[engine.AgentPath]; !slices.Contains(got, "/bin/wink-mcp") || !slices.Contains(got, "ro") {
		t.Errorf("agent mount %v", got)
	}
	if got := mounts["/tmp"]; got == nil || got[0] != "tmpfs" || !slices.Contains(got, "size=268435456") || !slices.Contains(got, "U") {
		t.Errorf("tmp mount %v", got)
	}
}

// TestSetupTmpOnDisk checks that a setup container's /tmp is its own
// directory, not a tmpfs, and that it keeps every other setting.
func TestSetupTmpOnDisk(t *testing.T) {
	spec := engine.Spec{Name: "wink-x", Image: "img", User: "0:0", Root: "/workspace", WorkspaceDir: "/cache/ws", AgentBinary: "/bin/wink-mcp",
		Caps: engine.SetupCaps, Limits: engine.Limits{MemoryBytes: 1 << 30, CPUs: 1, PidsLimit: 256, TmpBytes: 256 << 20}}
	session := podmanSpec(spec, "")
	spec.TmpOnDisk = true
	setup := podmanSpec(spec, "")
	for _, m := range setup.Mounts {
		if m.Destination == "/tmp" {
			t.Errorf("a setup container has a /tmp mount: %+v", m)
		}
	}
	if len(setup.Mounts) != len(session.Mounts)-1 || setup.NetNS != session.NetNS || !slices.Equal(setup.CapDrop, session.CapDrop) ||
		*setup.NoNewPrivileges != *session.NoNewPrivileges || *setup.ResourceLimits.Memory.Limit != *session.ResourceLimits.Memory.Limit {
		t.Errorf("TmpOnDisk changed more than /tmp: %+v", setup)
	}
}

// TestSetupWorkspaceInContainer checks that a setup container's
// /workspace is neither a host directory nor a volume but its own, made
// when the image lacks it, that it keeps every other setting, and that a
// mount at /workspace is then drift.
func TestSetupWorkspaceInContainer(t *testing.T) {
	spec := engine.Spec{Name: "wink-x", Image: "img", User: "0:0", Root: "/workspace", AgentBinary: "/bin/wink-mcp",
		Caps: engine.SetupCaps, Limits: testLimits, TmpOnDisk: true}
	for _, where := range []engine.Spec{{WorkspaceDir: "/cache/ws"}, {WorkspaceVolume: "wink-x", CopyAgent: true}} {
		spec.WorkspaceDir, spec.WorkspaceVolume, spec.CopyAgent = where.WorkspaceDir, where.WorkspaceVolume, where.CopyAgent
		session := podmanSpec(spec, "")
		spec.WorkspaceInContainer = true
		setup := podmanSpec(spec, "")
		spec.WorkspaceInContainer = false
		kept := len(session.Mounts) + len(session.Volumes) - 1
		if slices.ContainsFunc(setup.Mounts, func(m rspec.Mount) bool { return m.Destination == "/workspace" }) || len(setup.Volumes) != 0 ||
			setup.CreateWorkingDir == nil || !*setup.CreateWorkingDir || setup.WorkDir != "/workspace" || len(setup.Mounts) != kept {
			t.Errorf("from %+v: mounts %+v, volumes %+v, workdir %s (made: %v); want /workspace the container's own",
				where, setup.Mounts, setup.Volumes, setup.WorkDir, setup.CreateWorkingDir)
		}
		if setup.NetNS != session.NetNS || !slices.Equal(setup.CapDrop, session.CapDrop) || !slices.Equal(setup.CapAdd, session.CapAdd) ||
			*setup.NoNewPrivileges != *session.NoNewPrivileges || *setup.ResourceLimits.Memory.Limit != *session.ResourceLimits.Memory.Limit {
			t.Errorf("WorkspaceInContainer changed more than /workspace: %+v", setup)
		}
	}
	spec.WorkspaceInContainer, spec.WorkspaceDir, spec.WorkspaceVolume, spec.CopyAgent = true, "", "", false
	d := inspected(spec)
	d.EffectiveCaps, d.BoundingCaps = engine.SetupCaps, engine.SetupCaps
	d.Mounts = d.Mounts[1:] // the agent alone
	if err := checkEffective(spec, "", d); err != nil {
		t.Errorf("a setup container without a /workspace mount was refused: %v", err)
	}
	d.Mounts = append(d.Mounts, define.InspectMount{Type: "bind", Source: "/c/w", Destination: "/workspace", RW: true})
	if err := checkEffective(spec, "", d); !errors.Is(err, engine.ErrSettingsDrift) {
		t.Errorf("a mount at /workspace of a setup container: %v, want it refused", err)
	}
}

func TestCandidateURIs(t *testing.T) {
	if got := candidateURIs("tcp://h:1", "/run/user/1"); !slices.Equal(got, []string{"tcp://h:1"}) {
		t.Errorf("configured: %v", got)
	}
	want := []string{"unix:///run/podman/podman.sock", "unix:///run/user/1/podman/podman.sock"}
	if got := candidateURIs("", "/run/user/1"); !slices.Equal(got, want) {
		t.Errorf("discovered: %v, want %v", got, want)
	}
	if got := candidateURIs("", ""); len(got) != 1 {
		t.Errorf("without XDG_RUNTIME_DIR: %v", got)
	}
}

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

// A container without the cgroup limits gets no resource limits in its
// Podman spec, and is checked for everything else.
func TestSpecWithoutCgroupLimits(t *testing.T) {
	spec := engine.Spec{User: "1000:1000", Root: "/workspace", WorkspaceDir: "/c/w", AgentBinary: "/bin/wink", Limits: testLimits, Unlimited: "memory,cpu,pids"}
	r := podmanSpec(spec, "").ResourceLimits
	if r.Memory != nil || r.CPU != nil || r.Pids != nil {
		t.Errorf("limits asked for that the host drops: %+v", r)
	}
	if rl := podmanSpec(spec, "").Rlimits; len(rl) != 2 {
		t.Errorf("rlimits %v, want nofile and nproc", rl)
	}
	d := inspected(spec)
	d.HostConfig.Memory, d.HostConfig.MemorySwap, d.HostConfig.PidsLimit = 0, 0, 0
	d.HostConfig.CpuQuota, d.HostConfig.CpuPeriod, d.HostConfig.CpuShares = 0, 0, 0
	if err := checkEffective(spec, "", d); err != nil {
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
		if err := checkEffective(spec, "", d); !errors.Is(err, engine.ErrSettingsDrift) {
			t.Errorf("%s drift without cgroup limits: %v, want it refused", name, err)
		}
	}
	partial := spec
	partial.Unlimited = "cpu"
	d = inspected(partial)
	d.HostConfig.Memory = 0
	if err := checkEffective(partial, "", d); !errors.Is(err, engine.ErrSettingsDrift) {
		t.Errorf("only the CPU limit is off, yet a missing memory limit passed: %v", err)
	}
}

// With the files on the Podman host, /workspace is the session's volume and
// nothing of this machine is mounted; the check accepts that volume alone.
func TestSpecWithTheFilesOnThePodmanHost(t *testing.T) {
	spec := engine.Spec{User: "65534:65534", Root: "/workspace", WorkspaceVolume: "wink-x", CopyAgent: true,
		AgentBinary: "/bin/wink", Limits: testLimits}
	s := podmanSpec(spec, "")
	for _, m := range s.Mounts {
		if m.Type == "bind" {
			t.Errorf("a bind mount of %s at %s", m.Source, m.Destination)
		}
	}
	if len(s.Volumes) != 1 || s.Volumes[0].Name != "wink-x" || s.Volumes[0].Dest != "/workspace" {
		t.Errorf("volumes %+v, want wink-x at /workspace", s.Volumes)
	}
	d := inspected(spec)
	d.Mounts = []define.InspectMount{{Type: "volume", Name: "wink-x", Destination: "/workspace", RW: true}}
	if err := checkEffective(spec, "", d); err != nil {
		t.Errorf("the session's volume was refused: %v", err)
	}
	for name, m := range map[string]define.InspectMount{
		"another volume at /workspace": {Type: "volume", Name: "other", Destination: "/workspace", RW: true},
		"a bind at /workspace":         {Type: "bind", Source: "/c/w", Destination: "/workspace", RW: true},
		"the agent bound in":           {Type: "bind", Source: "/bin/wink", Destination: engine.AgentPath},
	} {
		d.Mounts = []define.InspectMount{m}
		if err := checkEffective(spec, "", d); !errors.Is(err, engine.ErrSettingsDrift) {
			t.Errorf("%s: %v, want it refused", name, err)
		}
	}
}

// The agent copied to a Podman host is a Linux executable for its
// architecture; anything else is refused, saying what to pass.
func TestPickAgent(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	own := runtime.GOARCH
	if b, err := pickAgent(self, own); err != nil || len(b) == 0 {
		t.Errorf("this test binary for linux/%s: %d bytes, %v", own, len(b), err)
	}
	other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[own]
	for path, want := range map[string]string{
		self:          "is built for linux/" + own,
		"/etc/passwd": "/etc/passwd is not a Linux executable",
		"":            "no agent binary is given",
	} {
		_, err := pickAgent(path, other)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--agent-binary") || !strings.Contains(err.Error(), "make dist") {
			t.Errorf("pickAgent(%q, %s) = %v, want it refused with %q", path, other, err, want)
		}
	}
}
