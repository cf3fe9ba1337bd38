package profiles

import (
	"cmp"
	"maps"
	"strings"
)

// resolve merges into profile name what it extends; chain holds the
// profiles that extend it, to find cycles.
func (r *reader) resolve(name string, chain []string) *Profile {
	rp := r.raw[name]
	for _, c := range chain {
		if c == name {
			r.fail(rp.extNode, name, "extends", "is a cycle: %s", strings.Join(append(chain, name), " -> "))
			return nil
		}
	}
	p := rp.p
	if rp.extends == "" {
		return &p
	}
	if r.raw[rp.extends] == nil {
		r.fail(rp.extNode, name, "extends", "names no profile of this file")
		return nil
	}
	parent := r.resolve(rp.extends, append(chain, name))
	if parent == nil {
		return nil
	}
	return merge(parent, &p)
}

// merge returns child over parent: a value the child sets replaces the
// parent's; env is merged by name; setup commands, egress and egress_cache
// patterns, mounts and CDI devices are the parent's followed by the child's.
func merge(parent, child *Profile) *Profile {
	out := *child
	out.Description = cmp.Or(child.Description, parent.Description)
	out.Image = cmp.Or(child.Image, parent.Image)
	out.Workdir = cmp.Or(child.Workdir, parent.Workdir)
	out.CABundle = cmp.Or(child.CABundle, parent.CABundle)
	if out.Repo == nil {
		out.Repo, out.RepoLine = parent.Repo, parent.RepoLine
	}
	if out.Services == nil {
		out.Services = parent.Services
	}
	out.Setup = append(append([]string{}, parent.Setup...), child.Setup...)
	out.SetupSource = append(append([]string{}, parent.SetupSource...), child.SetupSource...)
	out.Env = maps.Clone(parent.Env)
	if out.Env == nil {
		out.Env = map[string]string{}
	}
	maps.Copy(out.Env, child.Env)
	out.Egress.Setup = append(append([]string{}, parent.Egress.Setup...), child.Egress.Setup...)
	out.Egress.Session = append(append([]string{}, parent.Egress.Session...), child.Egress.Session...)
	out.EgressCache = append(append([]string{}, parent.EgressCache...), child.EgressCache...)
	out.Egress.SSHAgentHosts = append(append([]string{}, parent.Egress.SSHAgentHosts...), child.Egress.SSHAgentHosts...)
	out.Mounts = append(append([]Mount{}, parent.Mounts...), child.Mounts...)
	out.CDIDevices = append(append([]string{}, parent.CDIDevices...), child.CDIDevices...)
	l, pl := &out.Limits, parent.Limits
	l.MemoryBytes = cmp.Or(l.MemoryBytes, pl.MemoryBytes)
	l.CPUs = cmp.Or(l.CPUs, pl.CPUs)
	l.Pids = cmp.Or(l.Pids, pl.Pids)
	l.DiskBytes = cmp.Or(l.DiskBytes, pl.DiskBytes) // nil: unset (0 turns the limit off)
	l.TmpBytes = cmp.Or(l.TmpBytes, pl.TmpBytes)
	l.CommandTimeout = cmp.Or(l.CommandTimeout, pl.CommandTimeout)
	l.SetupTimeout = cmp.Or(l.SetupTimeout, pl.SetupTimeout)
	l.SetupDiskBytes = cmp.Or(l.SetupDiskBytes, pl.SetupDiskBytes)
	return &out
}
