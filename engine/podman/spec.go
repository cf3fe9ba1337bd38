//go:build containers_image_openpgp

package podman

import (
	"fmt"
	"maps"

	"github.com/containers/podman/v5/pkg/specgen"
	spec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/wire"
)

// CPU scheduling of every session container. Both keep an abusive session
// from delaying the others' calls, which pass through the server, the
// Podman service and conmon. On a 2-core host, the reliability suite's
// neighbour p99 during a disk fill went from 2.5-2.8 to 1.6-2.5 times its
// baseline, and during 1 GB of output from 2.4-3.7 to 2.0-3.4 times
// (four runs each).
const (
	// cpuPeriod is the CFS period the CPU quota is enforced over, in µs:
	// 10 ms rather than the usual 100 ms, so a container allowed one CPU
	// cannot hold every core for half of a long period before it is throttled.
	cpuPeriod = 10_000
	// cpuShares is the containers' CPU weight (cgroup v1 shares; Podman maps
	// it to cpu.weight on v2), an eighth of the default 1024: under
	// contention they yield to the host's processes, among them the ones
	// relaying every session's calls, and share equally among themselves.
	cpuShares = 128
)

// podmanSpec turns a engine.Spec into Podman's create request, with the
// tunnel's socket directory tunnelDir ("" for none) mounted read-only at
// wire.TunnelSocketDir. Every hardening setting is explicit here, so
// nothing depends on the host's containers.conf.
func podmanSpec(c engine.Spec, tunnelDir string) *specgen.SpecGenerator {
	s := specgen.NewSpecGenerator(c.Image, false)
	s.Name = c.Name
	s.Labels = c.Labels
	s.Entrypoint = []string{engine.AgentPath}
	s.Command = []string{"agent", "--workspace", c.Root}
	s.User = c.User
	s.WorkDir = c.Root
	s.Hostname = "workspace"
	// The container user (nobody) has no writable home directory.
	s.Env = map[string]string{"HOME": "/tmp"}
	maps.Copy(s.Env, c.Env)
	s.NetNS = specgen.Namespace{NSMode: specgen.NoNetwork}
	s.CapDrop = []string{"ALL"}
	s.CapAdd = c.Caps
	s.NoNewPrivileges = ptr(true)
	// A device that is not a path is a CDI name, which Podman resolves
	// against the host's CDI specs (the server checked they name it).
	for _, name := range c.CDIDevices {
		s.Devices = append(s.Devices, spec.LinuxDevice{Path: name})
	}
	// Volumes an image declares become tmpfs, so no anonymous volume outlives the container.
	s.ImageVolumeMode = "tmpfs"
	s.StopTimeout = ptr(uint(0))

	// A limit the host cannot enforce is not asked for (Podman would drop
	// it with a warning); the user accepted that (engine.Spec.Unlimited).
	memory := c.MemoryBytes
	quota := cpuQuota(c.CPUs)
	s.ResourceLimits = &spec.LinuxResources{}
	if c.Limited("memory") {
		s.ResourceLimits.Memory = &spec.LinuxMemory{Limit: &memory, Swap: &memory}
	}
	if c.Limited("cpu") {
		s.ResourceLimits.CPU = &spec.LinuxCPU{Quota: &quota, Period: ptr(uint64(cpuPeriod)), Shares: ptr(uint64(cpuShares))}
	}
	if c.Limited("pids") {
		s.ResourceLimits.Pids = &spec.LinuxPids{Limit: c.PidsLimit}
	}
	s.Rlimits = []spec.POSIXRlimit{
		{Type: "nofile", Soft: c.NofileLimit, Hard: c.NofileLimit},
		{Type: "nproc", Soft: c.NprocLimit, Hard: c.NprocLimit},
	}
	if !c.TmpOnDisk {
		// "U" makes the container user own the tmpfs: runc resets a tmpfs to
		// the mode of the image's /tmp, which may be root's 0755.
		s.Mounts = append(s.Mounts, spec.Mount{Type: "tmpfs", Source: "tmpfs", Destination: "/tmp",
			Options: []string{"rw", "nosuid", "nodev", fmt.Sprintf("size=%d", c.TmpBytes), "mode=1777", "U"}})
	}
	switch {
	case c.WorkspaceInContainer:
		s.CreateWorkingDir = ptr(true)
	case c.WorkspaceVolume != "":
		s.Volumes = []*specgen.NamedVolume{{Name: c.WorkspaceVolume, Dest: c.Root, Options: []string{"rw", "nosuid", "nodev"}}}
	default:
		s.Mounts = append(s.Mounts, spec.Mount{Type: "bind", Source: c.WorkspaceDir, Destination: c.Root, Options: []string{"rw", "nosuid", "nodev"}})
	}
	if !c.CopyAgent {
		s.Mounts = append(s.Mounts, spec.Mount{Type: "bind", Source: c.AgentBinary, Destination: engine.AgentPath, Options: []string{"ro", "nosuid", "nodev"}})
	}
	if tunnelDir != "" {
		s.Mounts = append(s.Mounts, spec.Mount{Type: "bind", Source: tunnelDir, Destination: wire.TunnelSocketDir, Options: []string{"ro", "nosuid", "nodev", "noexec"}})
	}
	for _, m := range c.Mounts {
		if m.ReadOnly {
			s.Mounts = append(s.Mounts, spec.Mount{Type: "bind", Source: m.Source, Destination: m.Destination, Options: []string{"ro", "nosuid", "nodev"}})
			continue
		}
		s.OverlayVolumes = append(s.OverlayVolumes, &specgen.OverlayVolume{Source: m.Source, Destination: m.Destination,
			Options: []string{"upperdir=" + m.Upper, "workdir=" + m.Work}})
	}
	if c.KeepID {
		s.UserNS = specgen.Namespace{NSMode: specgen.KeepID}
	}
	return s
}

// cpuQuota is the CFS quota, per cpuPeriod, of a limit of cpus cores.
func cpuQuota(cpus float64) int64 { return int64(cpus * cpuPeriod) }

func ptr[T any](v T) *T { return &v }

// relabel marks the host folders bind-mounted into the container with the
// shared container label ("z"), without which SELinux denies the container
// access to them. The agent binary is left alone: it is executable by
// containers as it is, and relabelling it would change a host file for all.
func relabel(s *specgen.SpecGenerator) {
	for i, m := range s.Mounts {
		if m.Type == "bind" && m.Destination != engine.AgentPath {
			s.Mounts[i].Options = append(m.Options, "z")
		}
	}
}
