//go:build linux

package agent

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wink-mcp/wink-mcp/wire"
)

// scan answers OpScan. It walks the workspace through directory
// descriptors (openat and fstatat, never following a symlink), so no name
// a command swaps for a link leads it outside, and lists each entry with
// what the server needs to tell it changed.
func (a *Agent) scan(args wire.ScanArgs) (*wire.ScanResult, *wire.Error) {
	limit := args.Limit
	if limit <= 0 || limit > wire.ScanPageEntries {
		limit = wire.ScanPageEntries
	}
	_, done := a.mutations.begin() // no tool change is half made while the page is read
	defer done()
	root, err := a.root.Open(".")
	if err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "opening the workspace: %v", err)
	}
	defer root.Close()
	w := &walker{after: args.After.String(), skip: args.Skip, limit: limit}
	res := &wire.ScanResult{Entries: []wire.ScanEntry{}, StartedUnixNanos: time.Now().UnixNano()}
	w.out = &res.Entries
	if werr := w.dir(root, ""); werr != nil {
		return nil, werr
	}
	res.More = w.full
	return res, nil
}

// walker is one page of a scan.
type walker struct {
	after string
	skip  []string
	limit int
	out   *[]wire.ScanEntry
	bytes int // the names the page carries
	full  bool
}

// dir lists the directory f, whose workspace path is rel, and everything
// under it that comes after w.after.
func (w *walker) dir(f *os.File, rel string) *wire.Error {
	fd := int(f.Fd())
	names, err := f.Readdirnames(-1)
	if err != nil {
		return wire.Errorf(wire.CodeInvalid, "listing %q: %v; give the workspace user read and search permission on it (chmod u+rx)", shownRel(rel), err)
	}
	slices.SortFunc(names, func(x, y string) int { return bytes.Compare([]byte(x), []byte(y)) })
	for _, name := range names {
		p := joinRel(rel, name)
		if slices.Contains(w.skip, p) || (w.after != "" && walkOrder(p, w.after) < 0 && !isAncestor(p, w.after)) {
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if err == unix.ENOENT {
				continue // removed by a command since the listing
			}
			return wire.Errorf(wire.CodeInvalid, "reading %q: %v", p, err)
		}
		emit := w.after == "" || walkOrder(p, w.after) > 0
		if emit {
			if len(*w.out) == w.limit || w.bytes > wire.ScanPageBytes {
				w.full = true
				return nil
			}
			e, werr := entryOf(fd, name, p, &st)
			if werr != nil {
				return werr
			}
			*w.out = append(*w.out, e)
			w.bytes += len(p) + 64
			if e.Target != nil {
				w.bytes += len(e.Target.String())
			}
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == unix.ENOENT || err == unix.ENOTDIR || err == unix.ELOOP {
			continue // replaced by a command since the listing
		}
		if err != nil {
			return wire.Errorf(wire.CodeInvalid, "opening %q: %v; give the workspace user read and search permission on it (chmod u+rx)", p, err)
		}
		subdir := os.NewFile(uintptr(sub), p)
		werr := w.dir(subdir, p)
		subdir.Close()
		if werr != nil || w.full {
			return werr
		}
	}
	return nil
}

// entryOf describes the entry name in the directory fd.
func entryOf(fd int, name, p string, st *unix.Stat_t) (wire.ScanEntry, *wire.Error) {
	e := wire.ScanEntry{Path: wire.NameOf(p), Mode: st.Mode & 0o7777, Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano(), Ino: st.Ino}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		e.Kind, e.Size = wire.KindFile, st.Size
	case unix.S_IFDIR:
		e.Kind = wire.KindDirectory
	case unix.S_IFLNK:
		e.Kind = wire.KindSymlink
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlinkat(fd, name, buf)
		if err != nil {
			return e, wire.Errorf(wire.CodeInvalid, "reading the link %q: %v", p, err)
		}
		t := wire.NameOf(string(buf[:n]))
		e.Target = &t
	case unix.S_IFIFO:
		e.Kind = wire.KindFifo
	case unix.S_IFSOCK:
		e.Kind = wire.KindSocket
	default:
		e.Kind = wire.KindDevice
	}
	return e, nil
}

// walkOrder compares two workspace paths in walk order: component by
// component, bytewise, an ancestor before what it holds.
func walkOrder(a, b string) int {
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	for i := 0; i < len(as) && i < len(bs); i++ {
		if c := strings.Compare(as[i], bs[i]); c != 0 {
			return c
		}
	}
	return len(as) - len(bs)
}

// isAncestor reports whether dir holds p.
func isAncestor(dir, p string) bool { return strings.HasPrefix(p, dir+"/") }

func joinRel(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}

func shownRel(rel string) string {
	if rel == "" {
		return "/workspace"
	}
	return rel
}
