// Package mounts resolves the host folders a session's workspace shows
// (--mount, the client's roots) against the host and the allowed roots,
// lays out and fills their directories in a session directory (an
// overlay's upper, work and lower, a copy mount's files), reads what a
// session changed in them, and writes those changes as patches (the
// export at a session's end and `wink-mcp export`). It holds no state
// and no lock: each call works on the mounts and directories it is given,
// and the caller (package workspace) fixes a session's mounts once, under
// that session's lock.
package mounts

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/wink-mcp/wink-mcp/glob"
	"github.com/wink-mcp/wink-mcp/wspath"
)

// Mode says how a host folder appears in the workspace.
type Mode string

// Mount modes.
const (
	// Overlay shows the folder read-write through a Podman overlay: the
	// host copy never changes, and the session's changes collect in its
	// session directory.
	Overlay Mode = "overlay"
	// ReadOnly shows the folder read-only.
	ReadOnly Mode = "ro"
	// Copy copies the folder's files, filtered, into the session's
	// directory when the session starts; for hosts without overlays.
	Copy Mode = "copy"
)

// DefaultCopyMaxBytes bounds the bytes a copy mount copies unless it says otherwise.
const DefaultCopyMaxBytes = 256 << 20

// Mount is a host folder shown in every session's workspace.
type Mount struct {
	// HostPath is the folder on the host.
	HostPath string
	// Path is where it appears, relative to /workspace; "" means the
	// folder's own name.
	Path string
	// Mode is overlay (the default), ro or copy.
	Mode Mode
	// Include, Exclude, MaxBytes and FollowSymlinks apply to copy mounts:
	// the files copied are those matching an Include pattern (all when
	// there is none) and no Exclude pattern, at most MaxBytes in all;
	// symlinks are copied as links unless FollowSymlinks.
	Include        []string
	Exclude        []string
	MaxBytes       int64
	FollowSymlinks bool
}

// String renders the mount as its --mount flag would.
func (m Mount) String() string {
	return fmt.Sprintf("%s:%s:%s", m.HostPath, m.Path, m.Mode)
}

// Resolved is a Mount checked against the host: the folder exists,
// lies under an allowed root, and has an owner (UID, GID).
type Resolved struct {
	Mount
	include, exclude []*glob.Pattern
	roots            []string // the allowed roots, resolved: where a followed link may lead
	UID, GID         int
}

// writable reports whether the session may change the folder in place.
func (m Resolved) writable() bool { return m.Mode == Overlay }

// Plan is what start-up makes of the mount settings: the mounts and
// the allowed roots, resolved, and the owner of the writable mounts.
type Plan struct {
	Mounts []Resolved
	Roots  []string
	Owner  string // "uid:gid", "" without writable mounts
}

// MakePlan checks the mount settings against the host: the mounts, whether
// the client's roots are mounted, the allowed roots, the cache directory
// they must stay out of, and the --user. An explicit user makes the owner
// of the writable mounts irrelevant.
func MakePlan(list []Mount, mountRoots bool, allowedRoots []string, cacheDir, user string) (Plan, error) {
	if len(list) == 0 && !mountRoots {
		return Plan{}, nil
	}
	roots, err := resolveRoots(allowedRoots)
	if err != nil {
		return Plan{}, err
	}
	resolved, err := resolveMounts(list, roots, cacheDir)
	if err != nil {
		return Plan{}, err
	}
	owner, err := writableOwner(resolved)
	if user != "" {
		err = nil
	}
	return Plan{Mounts: resolved, Roots: roots, Owner: owner}, err
}

// resolveMounts checks mounts against the host and the (resolved) allowed
// roots, and against each other. Every problem is reported, each naming
// its mount.
func resolveMounts(mounts []Mount, roots []string, cacheDir string) ([]Resolved, error) {
	var errs []error
	var out []Resolved
	for _, m := range mounts {
		r, err := Resolve(m, roots, cacheDir)
		if err != nil {
			errs = append(errs, fmt.Errorf("--mount %s: %w", m.HostPath, err))
			continue
		}
		for _, other := range out {
			if Overlaps(r.Path, other.Path) {
				errs = append(errs, fmt.Errorf("--mount %s: its workspace path %q overlaps %q of %s; give one of them another WORKSPACE_PATH", m.HostPath, r.Path, other.Path, other.HostPath))
			}
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

// resolveRoots makes the allowed roots absolute, with symlinks resolved.
func resolveRoots(allowed []string) ([]string, error) {
	if len(allowed) == 0 {
		return nil, errors.New("host folders can be mounted only under an allowed root, and none is set: add --allowed-root DIR (or WINK_ALLOWED_ROOTS) naming a folder that holds them")
	}
	var errs []error
	var out []string
	for _, a := range allowed {
		p, err := realDir(a)
		if err != nil {
			errs = append(errs, fmt.Errorf("--allowed-root %s: %w", a, err))
			continue
		}
		out = append(out, p)
	}
	return out, errors.Join(errs...)
}

// Resolve checks one mount against the host, the (resolved) allowed roots
// and the cache directory, filling in its defaults.
func Resolve(m Mount, roots []string, cacheDir string) (Resolved, error) {
	r := Resolved{Mount: m, roots: roots}
	host, err := realDir(m.HostPath)
	if err != nil {
		return r, err
	}
	r.HostPath = host
	if !underAny(host, roots) {
		return r, fmt.Errorf("%s is outside the allowed roots (%s); mount a folder under one of them, or add its parent with --allowed-root", host, strings.Join(roots, ", "))
	}
	if cache, err := filepath.Abs(cacheDir); err == nil && (under(host, cache) || under(cache, host)) {
		return r, fmt.Errorf("%s holds or is inside the cache directory %s, where session files live", host, cache)
	}
	if r.Path == "" {
		r.Path = filepath.Base(host)
	}
	if r.Path, err = wspath.Clean(r.Path); err != nil {
		return r, fmt.Errorf("workspace path: %w; name one with HOST_PATH:WORKSPACE_PATH", err)
	}
	if r.Path == "" {
		return r, errors.New("the workspace path is /workspace itself; mount the folder at a folder inside it, such as HOST_PATH:project")
	}
	switch r.Mode {
	case "":
		r.Mode = Overlay
	case Overlay, ReadOnly:
	case Copy:
		if r.MaxBytes == 0 {
			r.MaxBytes = DefaultCopyMaxBytes
		}
	default:
		return r, fmt.Errorf("mode %q: want overlay, ro or copy", r.Mode)
	}
	if r.Mode != Copy && (len(m.Include)+len(m.Exclude) > 0 || m.MaxBytes != 0 || m.FollowSymlinks) {
		return r, errors.New("include, exclude, max_bytes and follow_symlinks apply to copy mounts only; add copy to the mount's options")
	}
	if r.MaxBytes < 0 {
		return r, fmt.Errorf("max_bytes %d must be positive", r.MaxBytes)
	}
	for _, p := range m.Include {
		g, err := glob.Compile(p)
		if err != nil {
			return r, fmt.Errorf("include %q: %w", p, err)
		}
		r.include = append(r.include, g)
	}
	for _, p := range m.Exclude {
		g, err := glob.Compile(p)
		if err != nil {
			return r, fmt.Errorf("exclude %q: %w", p, err)
		}
		r.exclude = append(r.exclude, g)
	}
	info, err := os.Stat(host)
	if err != nil {
		return r, err
	}
	r.UID, r.GID = fileOwner(info)
	return r, nil
}

// realDir returns the absolute path of an existing directory, symlinks resolved.
func realDir(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("%s does not exist or cannot be reached: %w", abs, errors.Unwrap(err))
	}
	info, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	if !info.IsDir() {
		return "", fmt.Errorf("%s is not a directory", real)
	}
	return real, nil
}

// under reports whether p is dir or inside it; both are clean and absolute.
func under(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if under(p, d) {
			return true
		}
	}
	return false
}

// Overlaps reports whether two workspace paths are the same or nested.
func Overlaps(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/")
}

// writableOwner returns the "uid:gid" owning the writable mounts, which
// the containers must run as for the session to edit them. Root-owned
// folders and folders of different owners are refused: the workspace runs
// as one user, never root.
func writableOwner(mounts []Resolved) (string, error) {
	owner, from := "", ""
	for _, m := range mounts {
		if !m.writable() {
			continue
		}
		o := fmt.Sprintf("%d:%d", m.UID, m.GID)
		switch {
		case m.UID == 0:
			return "", fmt.Errorf("--mount %s: the folder is owned by root, and the workspace never runs as root, so the session could not edit it; "+
				"mount it read-only (%s:%s:ro), copy it (%s:%s:copy), give it to a user (chown), or choose a user with --user", m.HostPath, m.HostPath, m.Path, m.HostPath, m.Path)
		case owner == "":
			owner, from = o, m.HostPath
		case owner != o:
			return "", fmt.Errorf("--mount %s is owned by %s but %s by %s; the workspace runs as one user, so mount one of them :ro or :copy, or choose a user with --user", m.HostPath, o, from, owner)
		}
	}
	return owner, nil
}

// OverlayOptionChar returns the first character of path that an overlay
// mount's options cannot carry (the kernel splits them at ',' and
// unescapes '\'), or 0. A host folder's path never reaches those options
// (see makeOverlayDirs); the cache directory's does.
func OverlayOptionChar(path string) rune {
	if i := strings.IndexAny(path, ",\\"); i >= 0 {
		return rune(path[i])
	}
	return 0
}
