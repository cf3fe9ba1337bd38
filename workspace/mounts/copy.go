package mounts

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/wink-mcp/wink-mcp/glob"
)

// copyEntry is one file or symlink a copy mount copies.
type copyEntry struct {
	rel    string // slash-separated, relative to the folder
	source string // absolute host path to read: the entry, or a followed link's target
	mode   fs.FileMode
	link   string // the target, for a symlink copied as a link
	size   int64
}

// CopyFiles copies a copy mount's files into the session: first into its
// base directory, which keeps them as they were for the session's diff,
// then, unless ws is nil, into the workspace at the mount's path, owned by
// uid:gid. It checks the whole selection against MaxBytes before copying
// anything.
func CopyFiles(m Mounted, ws *os.Root, uid, gid int) error {
	entries, err := selectCopy(m)
	if err != nil {
		return err
	}
	tmp := m.Base() + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return err
	}
	base, err := os.OpenRoot(tmp)
	if err != nil {
		return err
	}
	defer base.Close()
	var dst *os.Root
	if ws != nil {
		if err := makeMountPoint(ws, m.Path, uid, gid); err != nil {
			return err
		}
		if dst, err = ws.OpenRoot(m.Path); err != nil {
			return err
		}
		defer dst.Close()
	}
	owner := func(*os.Root, string) error { return nil }
	if os.Geteuid() == 0 {
		owner = func(r *os.Root, name string) error { return r.Lchown(name, uid, gid) }
	}
	for _, e := range entries {
		if err := copyOne(e, base, nil); err != nil {
			return err
		}
		if dst == nil {
			continue
		}
		// The workspace's copy is made from the base, so the two are the
		// same even if the host file changes meanwhile.
		e.source = filepath.Join(tmp, filepath.FromSlash(e.rel))
		if err := copyOne(e, dst, owner); err != nil {
			return err
		}
	}
	return os.Rename(tmp, m.Base())
}

// copyOne writes one entry under root, creating its parent directories;
// owner, if not nil, gives each new entry to the container user.
func copyOne(e copyEntry, root *os.Root, owner func(*os.Root, string) error) error {
	dir := ""
	for _, seg := range splitDir(e.rel) {
		dir = path.Join(dir, seg)
		if err := root.Mkdir(dir, 0o755); err != nil {
			if errors.Is(err, fs.ErrExist) {
				continue
			}
			return err
		}
		if owner != nil {
			if err := owner(root, dir); err != nil {
				return err
			}
		}
	}
	if e.link != "" {
		if err := root.Symlink(e.link, e.rel); err != nil {
			return err
		}
	} else if err := copyFile(e, root); err != nil {
		return err
	}
	if owner != nil {
		return owner(root, e.rel)
	}
	return nil
}

func copyFile(e copyEntry, root *os.Root) error {
	src, err := os.OpenFile(e.source, os.O_RDONLY|syscall.O_NONBLOCK|noFollow, 0)
	if err != nil {
		return err
	}
	defer src.Close()
	if info, err := src.Stat(); err != nil || !info.Mode().IsRegular() {
		return fmt.Errorf("%s is no longer a regular file", e.source)
	}
	out, err := root.OpenFile(e.rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, e.mode.Perm())
	if err != nil {
		return err
	}
	n, err := io.Copy(out, io.LimitReader(src, e.size+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != e.size {
		err = fmt.Errorf("%s changed size while being copied", e.source)
	}
	if err == nil {
		err = root.Chmod(e.rel, e.mode.Perm())
	}
	return err
}

// selectCopy walks the host folder and returns the entries to copy, in
// walk order, refusing a selection over MaxBytes.
func selectCopy(m Mounted) ([]copyEntry, error) {
	var out []copyEntry
	var total int64
	visited := map[string]bool{m.HostPath: true}
	var walk func(dir, rel string) error
	walk = func(dir, rel string) error {
		names, err := readDirNames(dir)
		if err != nil {
			return err
		}
		for _, name := range names {
			p, r := filepath.Join(dir, name), path.Join(rel, name)
			if matchAny(m.exclude, r) {
				continue
			}
			info, err := os.Lstat(p)
			if err != nil {
				return err
			}
			source := p
			if info.Mode()&fs.ModeSymlink != 0 {
				target, err := os.Readlink(p)
				if err != nil {
					return err
				}
				real, err := filepath.EvalSymlinks(p)
				if !m.FollowSymlinks || err != nil || !underAny(real, m.roots) {
					// Copied as a link: inside the container it points
					// into the container, never at the host.
					if len(m.include) == 0 || matchAny(m.include, r) {
						out = append(out, copyEntry{rel: r, link: target, mode: fs.ModeSymlink})
					}
					continue
				}
				if info, err = os.Stat(real); err != nil {
					return err
				}
				source = real
			}
			switch {
			case info.IsDir():
				if visited[source] {
					continue // a link back up the tree
				}
				visited[source] = true
				if err := walk(source, r); err != nil {
					return err
				}
			case info.Mode().IsRegular():
				if len(m.include) > 0 && !matchAny(m.include, r) {
					continue
				}
				total += info.Size()
				if total > m.MaxBytes {
					return fmt.Errorf("the files selected are more than max_bytes (%d bytes); narrow them with include= and exclude=, or raise max_bytes", m.MaxBytes)
				}
				out = append(out, copyEntry{rel: r, source: source, mode: info.Mode(), size: info.Size()})
			}
			// Fifos, sockets and devices are not copied.
		}
		return nil
	}
	if err := walk(m.HostPath, ""); err != nil {
		return nil, err
	}
	return out, nil
}

func readDirNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, err
}

// splitDir returns the directory segments of a slash-separated path.
func splitDir(rel string) []string {
	dir := path.Dir(rel)
	if dir == "." {
		return nil
	}
	return strings.Split(dir, "/")
}

// matchAny reports whether rel matches one of the patterns.
func matchAny(patterns []*glob.Pattern, rel string) bool {
	for _, p := range patterns {
		if p.Match(rel) {
			return true
		}
	}
	return false
}
