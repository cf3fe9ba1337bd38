package checkpoints

import (
	"errors"
	"io"
	"io/fs"
	"path"
	"strings"
	"sync"
	"time"
)

// TreeFS is a checkpoint's tree as a read-only file system: it implements
// fs.FS, fs.ReadDirFS and fs.ReadLinkFS, so that the tools reading host
// folders read a checkpoint the same way. Open never follows a symlink.
// It is safe for concurrent use.
type TreeFS struct {
	s    *Store
	root string

	mu    sync.Mutex
	trees map[string][]Entry // trees read, by hash
}

// FS returns the tree root as a file system.
func (s *Store) FS(root string) *TreeFS {
	return &TreeFS{s: s, root: root, trees: map[string][]Entry{}}
}

var (
	_ fs.ReadDirFS  = (*TreeFS)(nil)
	_ fs.ReadLinkFS = (*TreeFS)(nil)
)

// tree returns the entries of a tree, read once.
func (t *TreeFS) tree(sum string) ([]Entry, error) {
	t.mu.Lock()
	entries, ok := t.trees[sum]
	t.mu.Unlock()
	if ok {
		return entries, nil
	}
	entries, err := t.s.ReadTree(sum)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.trees[sum] = entries
	t.mu.Unlock()
	return entries, nil
}

// lookup returns the entry at name ("." is the root, a directory). Names
// are as fs.ValidPath wants them, except that any bytes are allowed: a
// workspace's names need not be UTF-8.
func (t *TreeFS) lookup(name string) (Entry, error) {
	if !validPath(name) {
		return Entry{}, fs.ErrInvalid
	}
	cur := Entry{Name: ".", Kind: KindDir, Mode: 0o755, Hash: t.root}
	if name == "." {
		return cur, nil
	}
	for _, part := range strings.Split(name, "/") {
		if cur.Kind != KindDir {
			return Entry{}, fs.ErrNotExist
		}
		entries, err := t.tree(cur.Hash)
		if err != nil {
			return Entry{}, err
		}
		found := false
		for _, e := range entries {
			if e.Name == part {
				cur, found = e, true
				break
			}
		}
		if !found {
			return Entry{}, fs.ErrNotExist
		}
	}
	return cur, nil
}

// validPath is fs.ValidPath without its demand for UTF-8.
func validPath(name string) bool {
	if name == "." {
		return true
	}
	for _, part := range strings.Split(name, "/") {
		if part == "" || part == "." || part == ".." {
			return false
		}
	}
	return true
}

// Entries returns the entries of the directory at name, sorted.
func (t *TreeFS) Entries(name string) ([]Entry, error) {
	e, err := t.lookup(name)
	if err != nil {
		return nil, err
	}
	if e.Kind != KindDir {
		return nil, errors.New(name + ": not a directory")
	}
	return t.tree(e.Hash)
}

// Open opens a regular file or a directory.
func (t *TreeFS) Open(name string) (fs.File, error) {
	e, err := t.lookup(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	switch e.Kind {
	case KindFile:
		r, err := t.s.OpenBlob(e.Hash)
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return &treeFile{ReadCloser: r, info: entryInfo{e}}, nil
	case KindDir:
		return &treeFile{ReadCloser: io.NopCloser(strings.NewReader("")), info: entryInfo{e}}, nil
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: errors.New("not a regular file")}
}

// ReadDir lists a directory.
func (t *TreeFS) ReadDir(name string) ([]fs.DirEntry, error) {
	entries, err := t.Entries(name)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
	}
	out := make([]fs.DirEntry, 0, len(entries))
	for _, e := range entries {
		out = append(out, fs.FileInfoToDirEntry(entryInfo{e}))
	}
	return out, nil
}

// ReadLink returns a symlink's target.
func (t *TreeFS) ReadLink(name string) (string, error) {
	e, err := t.lookup(name)
	if err == nil && e.Kind != KindSymlink {
		err = errors.New("not a symlink")
	}
	if err != nil {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: err}
	}
	return e.Target, nil
}

// Lstat describes an entry without following it.
func (t *TreeFS) Lstat(name string) (fs.FileInfo, error) {
	e, err := t.lookup(name)
	if err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: err}
	}
	return entryInfo{e}, nil
}

// treeFile is an open file or directory of a TreeFS.
type treeFile struct {
	io.ReadCloser
	info entryInfo
}

func (f *treeFile) Stat() (fs.FileInfo, error) { return f.info, nil }

// entryInfo describes an Entry as fs.FileInfo.
type entryInfo struct{ e Entry }

func (i entryInfo) Name() string       { return path.Base(i.e.Name) }
func (i entryInfo) Size() int64        { return i.e.Size }
func (i entryInfo) ModTime() time.Time { return time.Time{} }
func (i entryInfo) IsDir() bool        { return i.e.Kind == KindDir }
func (i entryInfo) Sys() any           { return nil }

func (i entryInfo) Mode() fs.FileMode {
	m := fs.FileMode(i.e.Mode & 0o777)
	if i.e.Mode&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	if i.e.Mode&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if i.e.Mode&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	switch i.e.Kind {
	case KindDir:
		m |= fs.ModeDir
	case KindSymlink:
		m |= fs.ModeSymlink
	case KindFifo:
		m |= fs.ModeNamedPipe
	}
	return m
}
