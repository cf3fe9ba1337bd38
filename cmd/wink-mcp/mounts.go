package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/wink-mcp/wink-mcp/profiles"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// mountSyntax is the --mount flag's form, for messages.
const mountSyntax = "HOST_PATH[:WORKSPACE_PATH][:OPTIONS], OPTIONS being comma-separated: overlay (the default), ro, copy, " +
	"and for copy include=GLOB, exclude=GLOB (each repeatable), max_bytes=SIZE, follow_symlinks"

// parseMount reads one --mount value.
func parseMount(spec string) (workspace.Mount, error) {
	fail := func(format string, args ...any) (workspace.Mount, error) {
		return workspace.Mount{}, fmt.Errorf("--mount %q: %s (the form is %s)", spec, fmt.Sprintf(format, args...), mountSyntax)
	}
	parts := strings.Split(spec, ":")
	var m workspace.Mount
	m.HostPath = expandHome(parts[0])
	if m.HostPath == "" {
		return fail("the host path is empty")
	}
	options := ""
	switch len(parts) {
	case 1:
	case 2:
		if isOptions(parts[1]) {
			options = parts[1]
		} else {
			m.Path = parts[1]
		}
	case 3:
		m.Path, options = parts[1], parts[2]
	default:
		return fail("it has more than two ':'; for a host path holding ':', give a symlink to the folder, which is mounted as the folder it names")
	}
	if options == "" {
		return m, nil
	}
	for _, opt := range strings.Split(options, ",") {
		key, value, hasValue := strings.Cut(opt, "=")
		switch {
		case !hasValue && (key == string(workspace.MountOverlay) || key == string(workspace.MountReadOnly) || key == string(workspace.MountCopy)):
			if m.Mode != "" {
				return fail("it has two modes, %s and %s", m.Mode, key)
			}
			m.Mode = workspace.MountMode(key)
		case !hasValue && key == "follow_symlinks":
			m.FollowSymlinks = true
		case hasValue && key == "include":
			m.Include = append(m.Include, value)
		case hasValue && key == "exclude":
			m.Exclude = append(m.Exclude, value)
		case hasValue && key == "max_bytes":
			n, err := profiles.ParseSize(value)
			if err != nil {
				return fail("max_bytes: %v", err)
			}
			m.MaxBytes = n
		default:
			return fail("unknown option %q", opt)
		}
	}
	return m, nil
}

// isOptions reports whether s, the second part of a two-part --mount,
// is options rather than a workspace path.
func isOptions(s string) bool {
	for _, opt := range strings.Split(s, ",") {
		key, _, hasValue := strings.Cut(opt, "=")
		switch {
		case hasValue && (key == "include" || key == "exclude" || key == "max_bytes"):
		case !hasValue && (key == "overlay" || key == "ro" || key == "copy" || key == "follow_symlinks"):
		default:
			return false
		}
	}
	return true
}

// expandHome replaces a leading "~/" with the home directory: clients such
// as Claude Desktop pass arguments without a shell to expand them.
func expandHome(p string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return p
	}
	return filepath.Join(home, strings.TrimPrefix(p, "~"))
}

// pathList binds a repeatable flag of paths; its environment variable
// separates them with ';' (paths and --mount values may hold ',' and ':').
// Each flag is one value, whole: a folder named "a;b" can be given there.
func (b *binder) pathList(p *[]string, name, usage string, envs ...string) {
	add := func(s string) {
		for _, item := range strings.Split(s, ";") {
			if item = strings.TrimSpace(item); item != "" {
				*p = append(*p, item)
			}
		}
	}
	for _, env := range envs {
		if s, ok := b.lookup(env); ok && s != "" {
			add(s)
		}
	}
	b.fs.Func(name, fmt.Sprintf("%s [%s, ';'-separated]", usage, strings.Join(envs, ", ")), func(s string) error {
		if s = strings.TrimSpace(s); s == "" {
			return errors.New("empty value")
		}
		*p = append(*p, s)
		return nil
	})
}
