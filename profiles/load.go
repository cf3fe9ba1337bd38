package profiles

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/wink-mcp/wink-mcp/egress"
	"github.com/wink-mcp/wink-mcp/hostcdi"
	"github.com/wink-mcp/wink-mcp/workspace/repo"
)

// MaxFileBytes bounds a profiles file.
const MaxFileBytes = 1 << 20

var (
	namePattern    = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,39}$`)
	envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	imagePattern   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/:@-]{0,254}$`)
)

// proxyVariables are set by the egress proxy; a profile may not change them.
var proxyVariables = []string{"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY"}

// Load reads and checks the profiles file at path. lookup reads the
// server's environment, which ${NAME} in every value refers to (see expand).
func Load(path string, lookup func(string) (string, bool)) (*File, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("profiles file: %w", err)
	}
	if info.Size() > MaxFileBytes {
		return nil, fmt.Errorf("profiles file %s: %d bytes, more than the %d a profiles file may hold", path, info.Size(), MaxFileBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("profiles file: %w", err)
	}
	return Parse(path, data, lookup)
}

// Parse checks the profiles file data, read from path (which errors name).
func Parse(path string, data []byte, lookup func(string) (string, bool)) (*File, error) {
	return parse(path, fileID(path), data, lookup)
}

// parse is Parse with the file's identity (Profile.FileID) given.
func parse(path, id string, data []byte, lookup func(string) (string, bool)) (*File, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("%s: %s", path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	r := &reader{path: path, lookup: lookup, raw: map[string]*raw{}}
	if len(root.Content) == 0 {
		return nil, fmt.Errorf("%s: the file is empty; it needs a profiles: mapping (see docs/toolchains.md)", path)
	}
	doc := deref(root.Content[0])
	if doc.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: the file must be a mapping with a profiles: key", path, doc.Line)
	}
	r.fileID = id
	f := &File{Path: path, ID: r.fileID, Profiles: map[string]*Profile{}}
	var defaultNode *yaml.Node
	r.pairs(doc, "", func(key string, k, v *yaml.Node) {
		switch key {
		case "default":
			f.Default, _ = r.str(v, "", "default")
			defaultNode = v
		case "profiles":
			if v.Kind != yaml.MappingNode {
				r.fail(v, "", "profiles", "must be a mapping of profile names to profiles")
				return
			}
			r.pairs(v, "", func(name string, k, v *yaml.Node) { r.profile(name, k, v) })
		default:
			r.fail(k, "", key, "unknown key; the file has default: and profiles:")
		}
	})
	if len(r.errs) == 0 && len(r.raw) == 0 {
		r.fail(doc, "", "profiles", "no profiles are defined")
	}
	for name := range r.raw {
		if p := r.resolve(name, nil); p != nil {
			f.Profiles[name] = p
		}
	}
	r.checkServiceProfiles(f)
	if f.Default != "" && f.Profiles[f.Default] == nil && r.raw[f.Default] == nil {
		r.fail(defaultNode, "", "default", "names no profile of this file (%v)", f.Names())
	}
	if len(r.errs) > 0 {
		return nil, errors.Join(r.errs...)
	}
	return f, nil
}

// raw is one profile as written, before what it extends is merged in.
type raw struct {
	p       Profile
	extends string
	node    *yaml.Node // the profile's mapping, for errors
	extNode *yaml.Node
}

// reader turns the YAML nodes into profiles, collecting every error.
type reader struct {
	path   string
	fileID string
	lookup func(string) (string, bool)
	raw    map[string]*raw
	errs   []error
	// serviceRefs are the declared services' profiles, checked last.
	serviceRefs []serviceRef
}

// fail records an error at node n, in profile (may be "") and field.
func (r *reader) fail(n *yaml.Node, profile, field, format string, args ...any) {
	where := fmt.Sprintf("%s:%d", r.path, n.Line)
	if profile != "" {
		where += fmt.Sprintf(": profile %q", profile)
	}
	r.errs = append(r.errs, fmt.Errorf("%s: %s: %s", where, field, fmt.Sprintf(format, args...)))
}

// deref follows YAML aliases.
func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// pairs calls f with each key of the mapping n, refusing keys that repeat
// or are not strings.
func (r *reader) pairs(n *yaml.Node, profile string, f func(key string, k, v *yaml.Node)) {
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			r.fail(k, profile, "key", "must be a string")
			continue
		}
		if seen[k.Value] {
			r.fail(k, profile, k.Value, "is given twice")
			continue
		}
		seen[k.Value] = true
		f(k.Value, k, v)
	}
}

// str reads a scalar as text, with ${NAME} expanded.
func (r *reader) str(n *yaml.Node, profile, field string) (string, bool) {
	s, ok := r.scalar(n, profile, field)
	if !ok {
		return "", false
	}
	return r.expand(s, n, profile, field)
}

// scalar reads a scalar as the file writes it.
func (r *reader) scalar(n *yaml.Node, profile, field string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		r.fail(n, profile, field, "must be a single value")
		return "", false
	}
	if strings.ContainsRune(n.Value, 0) {
		r.fail(n, profile, field, "holds a NUL byte")
		return "", false
	}
	return n.Value, true
}

// strs reads a sequence of scalars, calling check on each.
func (r *reader) strs(n *yaml.Node, profile, field string, check func(v string, n *yaml.Node) (string, bool)) []string {
	if n.Kind != yaml.SequenceNode {
		r.fail(n, profile, field, "must be a list")
		return nil
	}
	out := []string{}
	for i, item := range n.Content {
		item = deref(item)
		v, ok := r.str(item, profile, fmt.Sprintf("%s[%d]", field, i))
		if ok && check != nil {
			v, ok = check(v, item)
		}
		if ok {
			out = append(out, v)
		}
	}
	return out
}

// profile reads the profile name defined by mapping v.
func (r *reader) profile(name string, k, v *yaml.Node) {
	if !namePattern.MatchString(name) {
		r.fail(k, name, "name", "must be 1-40 lowercase letters, digits, '_', '.' or '-', starting with a letter or digit")
		return
	}
	if v.Kind != yaml.MappingNode {
		r.fail(v, name, "profile", "must be a mapping of fields (description, extends, image, setup, env, workdir, limits, egress, egress_cache, mounts, ca_bundle, cdi_devices, repo, services)")
		return
	}
	rp := &raw{node: k, p: Profile{Name: name, File: r.path, FileID: r.fileID, Line: k.Line}}
	r.raw[name] = rp
	p := &rp.p
	r.pairs(v, name, func(field string, k, v *yaml.Node) {
		switch field {
		case "description":
			if s, ok := r.str(v, name, field); ok && len(s) > 500 {
				r.fail(v, name, field, "is %d bytes; at most 500", len(s))
			} else {
				p.Description = s
			}
		case "extends":
			rp.extends, _ = r.str(v, name, field)
			rp.extNode = v
		case "image":
			if s, ok := r.str(v, name, field); ok {
				p.Image, _ = r.image(s, v, name)
			}
		case "setup":
			p.Setup, p.SetupSource = r.commands(v, name)
		case "env":
			p.Env = r.env(v, name)
		case "workdir":
			if s, ok := r.str(v, name, field); ok {
				p.Workdir = r.workdir(s, v, name)
			}
		case "limits":
			p.Limits = r.limits(v, name)
		case "egress":
			p.Egress = r.egress(v, name)
		case "egress_cache":
			p.EgressCache = r.strs(v, name, field, func(s string, item *yaml.Node) (string, bool) {
				if _, err := egress.ParseCachePolicy([]string{s}); err != nil {
					r.fail(item, name, field, "%v", err)
					return "", false
				}
				return s, true
			})
		case "mounts":
			if v.Kind != yaml.SequenceNode {
				r.fail(v, name, field, "must be a list of host folders in --mount's form")
				return
			}
			for i, item := range v.Content {
				item = deref(item)
				if s, ok := r.str(item, name, fmt.Sprintf("mounts[%d]", i)); ok {
					p.Mounts = append(p.Mounts, Mount{Spec: s, Line: item.Line})
				}
			}
		case "cdi_devices":
			p.CDIDevices = r.strs(v, name, field, func(s string, item *yaml.Node) (string, bool) {
				if err := hostcdi.CheckName(s); err != nil {
					r.fail(item, name, field, "%v", err)
					return "", false
				}
				return s, true
			})
		case "ca_bundle":
			if s, ok := r.str(v, name, field); ok {
				p.CABundle = r.caBundle(s, v, name)
			}
		case "services":
			p.Services = r.services(v, name)
		case "repo":
			if s, ok := r.str(v, name, field); ok {
				if rp, err := repo.Parse(s); err != nil {
					r.fail(v, name, field, "%v", err)
				} else {
					p.Repo, p.RepoLine = &rp, v.Line
				}
			}
		default:
			r.fail(k, name, field, "unknown field; a profile has description, extends, image, setup, env, workdir, limits, egress, egress_cache, mounts, ca_bundle, cdi_devices, repo and services")
		}
	})
}

// commands reads the setup commands: as they run (${NAME} expanded) and
// as the file writes them.
func (r *reader) commands(n *yaml.Node, profile string) (run, written []string) {
	if n.Kind != yaml.SequenceNode {
		r.fail(n, profile, "setup", "must be a list")
		return nil, nil
	}
	for i, item := range n.Content {
		item = deref(item)
		field := fmt.Sprintf("setup[%d]", i)
		text, ok := r.scalar(item, profile, field)
		if !ok {
			continue
		}
		command, ok := r.expand(text, item, profile, field)
		if !ok {
			continue
		}
		if strings.TrimSpace(command) == "" || len(command) > MaxCommandBytes {
			r.fail(item, profile, "setup", "a command must hold 1 to %d bytes", MaxCommandBytes)
			continue
		}
		run, written = append(run, command), append(written, text)
	}
	if len(run) > MaxSetupCommands {
		r.fail(n, profile, "setup", "%d commands; at most %d (join them with &&)", len(run), MaxSetupCommands)
	}
	return run, written
}

// image checks the form of an image reference.
func (r *reader) image(s string, n *yaml.Node, profile string) (string, bool) {
	if !imagePattern.MatchString(s) {
		r.fail(n, profile, "image", "%q is not an image reference (such as localhost/wink-workspace:bookworm)", s)
		return "", false
	}
	return s, true
}

// env reads a mapping of variable names to values.
func (r *reader) env(n *yaml.Node, profile string) map[string]string {
	if n.Kind != yaml.MappingNode {
		r.fail(n, profile, "env", "must be a mapping of variable names to values")
		return nil
	}
	env := map[string]string{}
	r.pairs(n, profile, func(name string, k, v *yaml.Node) {
		field := "env." + name
		switch {
		case !envNamePattern.MatchString(name):
			r.fail(k, profile, field, "a variable name is letters, digits and '_', not starting with a digit")
			return
		case isProxyVariable(name):
			r.fail(k, profile, field, "is set by the egress proxy; give hosts in egress.session instead")
			return
		}
		if value, ok := r.str(v, profile, field); ok {
			env[name] = value
		}
	})
	if len(env) > MaxEnv {
		r.fail(n, profile, "env", "%d variables; at most %d", len(env), MaxEnv)
	}
	return env
}

func isProxyVariable(name string) bool {
	for _, v := range proxyVariables {
		if strings.EqualFold(name, v) {
			return true
		}
	}
	return false
}

// workdir reads a directory under /workspace, returned relative to it.
func (r *reader) workdir(s string, n *yaml.Node, profile string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(s, "/workspace"), "/")
	clean := path.Clean("/" + rel)
	if path.IsAbs(s) && s != "/workspace" && !strings.HasPrefix(s, "/workspace/") || strings.Contains(s, "..") || len(s) > 1024 {
		r.fail(n, profile, "workdir", "%q must be a directory under /workspace, such as app or /workspace/app, without '..'", s)
		return ""
	}
	return strings.TrimPrefix(clean, "/")
}

// limits reads the limits mapping.
func (r *reader) limits(n *yaml.Node, profile string) Limits {
	var l Limits
	if n.Kind != yaml.MappingNode {
		r.fail(n, profile, "limits", "must be a mapping (memory, cpus, pids, disk, tmp, command_timeout, setup_timeout, setup_disk)")
		return l
	}
	r.pairs(n, profile, func(key string, k, v *yaml.Node) {
		field := "limits." + key
		s, ok := r.str(v, profile, field)
		if !ok {
			return
		}
		size := func(min int64, zero bool) int64 {
			b, err := ParseSize(s)
			switch {
			case err != nil:
				r.fail(v, profile, field, "%v", err)
			case b == 0 && zero:
			case b < min:
				r.fail(v, profile, field, "%s is below the minimum of %d MiB", s, min>>20)
			}
			return b
		}
		duration := func() time.Duration {
			d, err := time.ParseDuration(s)
			if err != nil || d < time.Second || d > MaxTimeout {
				r.fail(v, profile, field, "%q must be a duration from 1s to 24h, such as 90s or 10m", s)
			}
			return d
		}
		switch key {
		case "memory":
			l.MemoryBytes = size(16<<20, false)
		case "cpus":
			c, err := strconv.ParseFloat(s, 64)
			if err != nil || c <= 0 || c > 1024 {
				r.fail(v, profile, field, "%q must be a number of cores above 0, such as 2 or 0.5", s)
			}
			l.CPUs = c
		case "pids":
			p, err := strconv.ParseInt(s, 10, 64)
			if err != nil || p < 16 || p > 1<<22 {
				r.fail(v, profile, field, "%q must be a whole number from 16 to %d", s, 1<<22)
			}
			l.Pids = p
		case "disk":
			b := size(16<<20, true)
			l.DiskBytes = &b
		case "tmp":
			l.TmpBytes = size(1<<20, false)
		case "command_timeout":
			l.CommandTimeout = duration()
		case "setup_timeout":
			l.SetupTimeout = duration()
		case "setup_disk":
			l.SetupDiskBytes = size(16<<20, false)
		default:
			r.fail(k, profile, field, "unknown limit; the limits are memory, cpus, pids, disk, tmp, command_timeout, setup_timeout and setup_disk")
		}
	})
	return l
}

// egress reads the setup and session allowlists.
func (r *reader) egress(n *yaml.Node, profile string) Egress {
	var e Egress
	if n.Kind != yaml.MappingNode {
		r.fail(n, profile, "egress", "must be a mapping with setup: and session: lists of host patterns")
		return e
	}
	r.pairs(n, profile, func(key string, k, v *yaml.Node) {
		field := "egress." + key
		check := func(s string, item *yaml.Node) (string, bool) {
			if _, err := egress.ParsePolicy([]string{s}); err != nil {
				r.fail(item, profile, field, "%v", err)
				return "", false
			}
			return s, true
		}
		switch key {
		case "setup":
			e.Setup = r.strs(v, profile, field, check)
		case "session":
			e.Session = r.strs(v, profile, field, check)
		case "ssh_agent_hosts":
			e.SSHAgentHosts = r.strs(v, profile, field, check)
		default:
			r.fail(k, profile, field, "unknown key; egress has setup: (hosts the setup commands reach), session: (hosts the sessions reach) "+
				"and ssh_agent_hosts: (hosts the server's --ssh-agent keys may be used for)")
		}
	})
	return e
}

// caBundle returns the path of a profile's ca_bundle, made absolute
// against the profiles file's folder; the server reads it at start.
func (r *reader) caBundle(s string, n *yaml.Node, profile string) string {
	if s == "" {
		r.fail(n, profile, "ca_bundle", "is empty; name a PEM file of CA certificates, or leave the field out")
		return ""
	}
	if !filepath.IsAbs(s) {
		s = filepath.Join(filepath.Dir(r.path), s)
	}
	return filepath.Clean(s)
}
