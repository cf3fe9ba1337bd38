package changes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"
)

// Folder is a host folder a session was given, next to the session's
// version of it. It is not safe for concurrent use; Close releases it.
type Folder struct {
	// IncludeIgnored puts the files the session created that the host
	// folder's .gitignore rules ignore in patches; by default they are
	// left out and named (Change.Ignored).
	IncludeIgnored bool

	base, current tree
	ignore        *ignoreRules
	candidates    func(rel string) ([]string, error)
	closers       []*dirTree
}

// OpenOverlay opens the folder of an overlay mount: hostDir is its lower
// directory, upperDir the directory that collected the session's changes,
// and markers the driver that made it.
func OpenOverlay(hostDir, upperDir string, markers Markers) (*Folder, error) {
	lower, err := openDir(hostDir)
	if err != nil {
		return nil, fmt.Errorf("opening the host folder: %w", err)
	}
	upper, err := openDir(upperDir)
	if err != nil {
		lower.close()
		return nil, fmt.Errorf("opening the session's changes: %w", err)
	}
	merged := &overlayTree{lower: lower, upper: upper, markers: markers, attrs: markers.attrs()}
	return &Folder{base: lower, current: merged, candidates: merged.changedNames, closers: []*dirTree{lower, upper}}, nil
}

// OpenCopy opens the folder of a copy mount: baseDir holds the files as they
// were copied, and the session's copy is at rel under workspaceDir. rel is
// resolved inside workspaceDir, so a symlink the session put in its place
// cannot lead out of it.
func OpenCopy(baseDir, workspaceDir, rel string) (*Folder, error) {
	base, err := openDir(baseDir)
	if err != nil {
		return nil, fmt.Errorf("opening the copied files: %w", err)
	}
	ws, err := os.OpenRoot(workspaceDir)
	if err != nil {
		base.close()
		return nil, fmt.Errorf("opening the workspace: %w", err)
	}
	defer ws.Close()
	var current *dirTree
	info, err := ws.Lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// The session deleted the whole folder: compare against an empty one.
		current = nil
	case err != nil:
		base.close()
		return nil, fmt.Errorf("opening the session's copy: %w", err)
	case !info.IsDir():
		base.close()
		return nil, fmt.Errorf("the session replaced the folder %s with a %s", rel, describeType(info.Mode()))
	default:
		root, err := ws.OpenRoot(rel)
		if err != nil {
			base.close()
			return nil, fmt.Errorf("opening the session's copy: %w", err)
		}
		current = &dirTree{root: root}
	}
	f := &Folder{base: base, closers: []*dirTree{base}}
	if current == nil {
		f.current = emptyTree{}
	} else {
		f.current = current
		f.closers = append(f.closers, current)
	}
	f.candidates = f.union
	return f, nil
}

// Close releases the folder's directories.
func (f *Folder) Close() error {
	var errs []error
	for _, d := range f.closers {
		errs = append(errs, d.close())
	}
	return errors.Join(errs...)
}

// Changes lists the files and symlinks the session created, modified or
// deleted, in walk order (a directory's entries sorted by name), as they are
// now: entries that change while being read are read again. What a patch
// leaves out in bulk comes last, one Group per directory: new directories
// the host folder ignores (counted, not walked), the new ignored files of a
// directory, and everything under .git. It stops when ctx is done. No file
// over ReadLimit is read.
func (f *Folder) Changes(ctx context.Context) ([]Change, error) {
	c := f.comparison(ctx)
	if err := c.walk(""); err != nil {
		return nil, err
	}
	return f.classify(c.out), nil
}

func (f *Folder) comparison(ctx context.Context) *comparison {
	return &comparison{ctx: ctx, base: f.base, current: f.current, candidates: f.candidates,
		wholeDir: f.wholeDir, counter: &counter{ctx: ctx, left: MaxCounted}}
}

// union lists the names in either tree's directory at rel.
func (f *Folder) union(rel string) ([]string, error) {
	a, err := f.base.names(rel)
	if err != nil {
		return nil, err
	}
	b, err := f.current.names(rel)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(a))
	for _, n := range a {
		seen[n] = true
	}
	for _, n := range b {
		if !seen[n] {
			a = append(a, n)
		}
	}
	slices.Sort(a)
	return a, nil
}

// emptyTree is a folder with nothing in it.
type emptyTree struct{}

func (emptyTree) lstat(rel string) (fs.FileInfo, error) {
	if rel == "" {
		return emptyRoot{}, nil
	}
	return nil, fs.ErrNotExist
}
func (emptyTree) names(string) ([]string, error)     { return nil, nil }
func (emptyTree) open(string) (io.ReadCloser, error) { return nil, fs.ErrNotExist }
func (emptyTree) readlink(string) (string, error)    { return "", fs.ErrNotExist }

// emptyRoot describes emptyTree's root directory.
type emptyRoot struct{}

func (emptyRoot) Name() string       { return "." }
func (emptyRoot) Size() int64        { return 0 }
func (emptyRoot) Mode() fs.FileMode  { return fs.ModeDir | 0o755 }
func (emptyRoot) ModTime() time.Time { return time.Time{} }
func (emptyRoot) IsDir() bool        { return true }
func (emptyRoot) Sys() any           { return nil }

func describeType(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m.IsRegular():
		return "file"
	}
	return strings.TrimSpace(m.Type().String())
}
