package workspace

import (
	"fmt"

	"github.com/containers/podman/v5/pkg/specgen"
	spec "github.com/opencontainers/runtime-spec/specs-go"
)

// cpuPeriod is the CFS period the CPU quota is expressed in (100 ms).
const cpuPeriod = 100_000

// podmanSpec turns a containerSpec into Podman's create request. Every
// hardening setting is explicit here, so nothing depends on the host's
// containers.conf.
func podmanSpec(c containerSpec) *specgen.SpecGenerator {
	s := specgen.NewSpecGenerator(c.Image, false)
	s.Name = c.Name
	s.Labels = c.Labels
	s.Entrypoint = []string{AgentPath}
	s.Command = []string{"agent", "--workspace", Root}
	s.User = c.User
	s.WorkDir = Root
	s.Hostname = "workspace"
	// The container user (nobody) has no writable home directory.
	s.Env = map[string]string{"HOME": "/tmp"}
	s.NetNS = specgen.Namespace{NSMode: specgen.NoNetwork}
	s.CapDrop = []string{"ALL"}
	s.NoNewPrivileges = ptr(true)
	// Volumes an image declares become tmpfs, so no anonymous volume outlives the container.
	s.ImageVolumeMode = "tmpfs"
	s.StopTimeout = ptr(uint(0))

	memory := c.MemoryBytes
	quota := cpuQuota(c.CPUs)
	s.ResourceLimits = &spec.LinuxResources{
		Memory: &spec.LinuxMemory{Limit: &memory, Swap: &memory},
		CPU:    &spec.LinuxCPU{Quota: &quota, Period: ptr(uint64(cpuPeriod))},
		Pids:   &spec.LinuxPids{Limit: c.PidsLimit},
	}
	s.Rlimits = []spec.POSIXRlimit{
		{Type: "nofile", Soft: c.NofileLimit, Hard: c.NofileLimit},
		{Type: "nproc", Soft: c.NprocLimit, Hard: c.NprocLimit},
	}
	s.Mounts = []spec.Mount{
		{Type: "bind", Source: c.WorkspaceDir, Destination: Root, Options: []string{"rw", "nosuid", "nodev"}},
		{Type: "bind", Source: c.AgentBinary, Destination: AgentPath, Options: []string{"ro", "nosuid", "nodev"}},
		// "U" makes the container user own the tmpfs: runc resets a tmpfs to
		// the mode of the image's /tmp, which may be root's 0755.
		{Type: "tmpfs", Source: "tmpfs", Destination: "/tmp", Options: []string{"rw", "nosuid", "nodev", fmt.Sprintf("size=%d", c.TmpBytes), "mode=1777", "U"}},
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
		if m.Type == "bind" && m.Destination != AgentPath {
			s.Mounts[i].Options = append(m.Options, "z")
		}
	}
}
