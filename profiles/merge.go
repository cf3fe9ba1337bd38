package profiles

import (
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
// parent's; env is merged by name; setup commands, egress patterns and
// mounts are the parent's followed by the child's.
func merge(parent, child *Profile) *Profile {
	out := *child
	if out.Description == "" {
		out.Description = parent.Description
	}
	if out.Image == "" {
		out.Image = parent.Image
	}
	if out.Workdir == "" {
		out.Workdir = parent.Workdir
	}
	out.Setup = append(append([]string{}, parent.Setup...), child.Setup...)
	out.Env = maps.Clone(parent.Env)
	if out.Env == nil {
		out.Env = map[string]string{}
	}
	maps.Copy(out.Env, child.Env)
	out.Egress.Setup = append(append([]string{}, parent.Egress.Setup...), child.Egress.Setup...)
	out.Egress.Session = append(append([]string{}, parent.Egress.Session...), child.Egress.Session...)
	out.Mounts = append(append([]Mount{}, parent.Mounts...), child.Mounts...)
	l, pl := &out.Limits, parent.Limits
	if l.MemoryBytes == 0 {
		l.MemoryBytes = pl.MemoryBytes
	}
	if l.CPUs == 0 {
		l.CPUs = pl.CPUs
	}
	if l.Pids == 0 {
		l.Pids = pl.Pids
	}
	if l.DiskBytes == nil {
		l.DiskBytes = pl.DiskBytes
	}
	if l.TmpBytes == 0 {
		l.TmpBytes = pl.TmpBytes
	}
	if l.CommandTimeout == 0 {
		l.CommandTimeout = pl.CommandTimeout
	}
	if l.SetupTimeout == 0 {
		l.SetupTimeout = pl.SetupTimeout
	}
	if l.SetupDiskBytes == 0 {
		l.SetupDiskBytes = pl.SetupDiskBytes
	}
	return &out
}
