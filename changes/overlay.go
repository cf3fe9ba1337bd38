package changes

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// Markers names the overlay driver that made an upper directory, which
// decides what in it is the overlay's metadata rather than the session's
// files. Anything else is data, whatever its name or attributes: a model can
// create a file called ".wh.README.md" or set a user.overlay.opaque
// attribute, and neither may read as a deletion.
type Markers string

// Overlay drivers.
const (
	// KernelMarkers is the kernel's overlayfs as root (rootful Podman):
	// whiteouts are 0/0 character devices; opaque directories, redirects and
	// metadata-only copies are trusted.overlay.* attributes, which an
	// unprivileged process cannot set.
	KernelMarkers Markers = "kernel"
	// UserxattrMarkers is the kernel's overlayfs mounted with userxattr
	// (rootless Podman): the same, with user.overlay.* attributes, which the
	// kernel refuses to set through the mount.
	UserxattrMarkers Markers = "userxattr"
	// FuseMarkers is fuse-overlayfs: whiteouts are 0/0 character devices or,
	// where it cannot make those, ".wh." files; opaque directories are marked
	// by an attribute or a ".wh..wh..opq" file.
	FuseMarkers Markers = "fuse-overlayfs"
)

// attrs are the extended attributes a driver uses, by role.
type attrs struct{ opaque, redirect, metacopy []string }

func (m Markers) attrs() attrs {
	switch m {
	case UserxattrMarkers:
		return attrs{opaque: []string{"user.overlay.opaque"}, redirect: []string{"user.overlay.redirect"}, metacopy: []string{"user.overlay.metacopy"}}
	case FuseMarkers:
		return attrs{opaque: []string{"trusted.overlay.opaque", "user.fuseoverlayfs.opaque", "user.overlay.opaque"}}
	}
	return attrs{opaque: []string{"trusted.overlay.opaque"}, redirect: []string{"trusted.overlay.redirect"}, metacopy: []string{"trusted.overlay.metacopy"}}
}

// whiteoutFiles reports whether the driver writes ".wh." files.
func (m Markers) whiteoutFiles() bool { return m == FuseMarkers }

// ParseMarkers returns the driver a manifest names; "" is the kernel's,
// what rootful Podman uses.
func ParseMarkers(s string) (Markers, error) {
	switch m := Markers(s); m {
	case "":
		return KernelMarkers, nil
	case KernelMarkers, UserxattrMarkers, FuseMarkers:
		return m, nil
	}
	return "", fmt.Errorf("unknown overlay driver %q (want %s, %s or %s)", s, KernelMarkers, UserxattrMarkers, FuseMarkers)
}

const (
	whiteoutPrefix = ".wh."
	opaqueMarker   = ".wh..wh..opq"
)

// overlayTree is the merged view of an overlay mount, rebuilt on the host
// from its lower directory (the host folder) and its upper directory (what
// the session changed), so it can be read after the container is gone.
type overlayTree struct {
	lower, upper *dirTree
	markers      Markers
	attrs        attrs
}

// place is where the entry at a merged path comes from.
type place struct {
	inUpper  bool   // the entry is in the upper directory, at the same path
	lowerRel string // its lower counterpart, when visible
	inLower  bool
}

// locate resolves a merged path component by component, following the
// overlay's rules: a whiteout hides the lower entry, an opaque directory
// hides the lower directory's entries, a redirect names the lower directory
// a renamed one came from.
func (o *overlayTree) locate(rel string) (place, error) {
	p := place{inUpper: true, inLower: true}
	if rel == "" {
		return p, nil
	}
	parts := strings.Split(rel, "/")
	upperRel := ""
	for i, part := range parts {
		last := i == len(parts)-1
		dir := upperRel
		upperRel = join(upperRel, part)
		if p.inUpper {
			info, err := o.upper.lstat(upperRel)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				p.inUpper = false
				if hidden, err := o.whitedOut(dir, part); err != nil || hidden {
					return place{}, err
				}
			case err != nil:
				return place{}, err
			case isWhiteout(info):
				return place{}, nil
			case !info.IsDir():
				if !last {
					return place{}, nil
				}
				p.inLower = false
				meta, err := o.upperAttr(upperRel, o.attrs.metacopy)
				if err != nil || meta == nil {
					return p, err
				}
				// A metadata-only copy: the data is still the lower file's.
				p.inLower, p.lowerRel = true, join(p.lowerRel, part)
				redirect, err := o.upperAttr(upperRel, o.attrs.redirect)
				if redirect != nil {
					p.lowerRel = redirectTarget(p.lowerRel, *redirect)
				}
				return p, err
			default:
				opaque, err := o.isOpaque(upperRel)
				if err != nil {
					return place{}, err
				}
				redirect, err := o.upperAttr(upperRel, o.attrs.redirect)
				if err != nil {
					return place{}, err
				}
				// An absolute redirect names its lower directory from the
				// root, whether or not the parent has a lower side: a host
				// directory moved into a new one.
				if opaque {
					p.inLower = false
				} else if redirect != nil && (p.inLower || strings.HasPrefix(*redirect, "/")) {
					p.lowerRel = redirectTarget(join(p.lowerRel, part), *redirect)
					info, err := o.lower.lstat(p.lowerRel)
					p.inLower = err == nil && info.IsDir()
					continue
				}
			}
		}
		if p.inLower {
			p.lowerRel = join(p.lowerRel, part)
			info, err := o.lower.lstat(p.lowerRel)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				p.inLower = false
			case err != nil:
				return place{}, err
			case !last && !info.IsDir():
				p.inLower = false
			}
		}
		if !p.inUpper && !p.inLower {
			return place{}, nil
		}
	}
	return p, nil
}

func (o *overlayTree) lstat(rel string) (fs.FileInfo, error) {
	p, err := o.locate(rel)
	switch {
	case err != nil:
		return nil, err
	case p.inUpper:
		return o.upper.lstat(rel)
	case p.inLower:
		return o.lower.lstat(p.lowerRel)
	}
	return nil, fmt.Errorf("%s: %w", rel, fs.ErrNotExist)
}

// names lists the merged directory: the upper entries that are not
// whiteouts, and the lower entries they do not hide.
func (o *overlayTree) names(rel string) ([]string, error) {
	_, upper, lower, err := o.layers(rel)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, n := range upper {
		seen[n] = true
		if o.markers.whiteoutFiles() && strings.HasPrefix(n, whiteoutPrefix) {
			seen[strings.TrimPrefix(n, whiteoutPrefix)] = true
			continue
		}
		if info, err := o.upper.lstat(join(rel, n)); err == nil && isWhiteout(info) {
			continue
		}
		out = append(out, n)
	}
	for _, n := range lower {
		if !seen[n] {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

// changedNames lists the entries of the merged directory at rel that may
// differ from the lower directory at the same path: everything in the upper
// directory (whiteouts included, under the name they hide), and, when the
// upper directory hides or replaces the lower one, every lower entry.
func (o *overlayTree) changedNames(rel string) ([]string, error) {
	p, upper, lower, err := o.layers(rel)
	if err != nil {
		return nil, err
	}
	all := map[string]bool{}
	for _, n := range upper {
		if o.markers.whiteoutFiles() {
			if n == opaqueMarker {
				continue
			}
			n = strings.TrimPrefix(n, whiteoutPrefix)
		}
		all[n] = true
	}
	if p.inUpper && (!p.inLower || p.lowerRel != rel) {
		// Opaque or redirected: the lower directory at rel is not what shows.
		if base, err := o.lower.names(rel); err == nil {
			lower = base
		}
		for _, n := range lower {
			all[n] = true
		}
	}
	out := make([]string, 0, len(all))
	for n := range all {
		out = append(out, n)
	}
	slices.Sort(out)
	return out, nil
}

// layers locates the merged directory at rel and lists its upper and
// visible lower entries.
func (o *overlayTree) layers(rel string) (p place, upper, lower []string, err error) {
	if p, err = o.locate(rel); err != nil {
		return p, nil, nil, err
	}
	if p.inUpper {
		if upper, err = o.upper.names(rel); err != nil {
			return p, nil, nil, err
		}
	}
	if p.inLower {
		if lower, err = o.lower.names(p.lowerRel); err != nil {
			return p, nil, nil, err
		}
	}
	if !p.inUpper && !p.inLower {
		return p, nil, nil, fmt.Errorf("%s: %w", rel, fs.ErrNotExist)
	}
	return p, upper, lower, nil
}

func (o *overlayTree) open(rel string) (io.ReadCloser, error) {
	t, at, err := o.source(rel)
	if err != nil {
		return nil, err
	}
	return t.open(at)
}

func (o *overlayTree) readlink(rel string) (string, error) {
	t, at, err := o.source(rel)
	if err != nil {
		return "", err
	}
	return t.readlink(at)
}

// source says which layer holds the data of the entry at rel, and where.
func (o *overlayTree) source(rel string) (*dirTree, string, error) {
	p, err := o.locate(rel)
	switch {
	case err != nil:
		return nil, "", err
	case p.inUpper && !p.inLower:
		return o.upper, rel, nil
	case p.inLower:
		return o.lower, p.lowerRel, nil
	}
	return nil, "", fmt.Errorf("%s: %w", rel, fs.ErrNotExist)
}

// whitedOut reports whether fuse-overlayfs left a ".wh." file hiding name in dir.
func (o *overlayTree) whitedOut(dir, name string) (bool, error) {
	if !o.markers.whiteoutFiles() {
		return false, nil
	}
	_, err := o.upper.lstat(join(dir, whiteoutPrefix+name))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

func (o *overlayTree) isOpaque(rel string) (bool, error) {
	v, err := o.upperAttr(rel, o.attrs.opaque)
	if err != nil || (v != nil && *v == "y") {
		return v != nil && *v == "y", err
	}
	if !o.markers.whiteoutFiles() {
		return false, nil
	}
	_, err = o.upper.lstat(join(rel, opaqueMarker))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// upperAttr returns the first of attrs set on the upper entry at rel, or nil.
func (o *overlayTree) upperAttr(rel string, attrs []string) (*string, error) {
	for _, a := range attrs {
		v, err := o.upper.xattr(rel, a)
		if err != nil {
			return nil, err
		}
		if v != "" {
			return &v, nil
		}
	}
	return nil, nil
}

// isWhiteout reports whether info is an overlay whiteout: a 0/0 character device.
func isWhiteout(info fs.FileInfo) bool {
	if info.Mode()&fs.ModeCharDevice == 0 {
		return false
	}
	return isNullDevice(info)
}

// redirectTarget resolves an overlay redirect: absolute targets are from the
// layer's root, relative ones name a sibling.
func redirectTarget(rel, target string) string {
	if strings.HasPrefix(target, "/") {
		return strings.Trim(path.Clean(target), "/")
	}
	return join(path.Dir(rel), target)
}
