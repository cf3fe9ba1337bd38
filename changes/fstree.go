package changes

import (
	"io"
	"io/fs"
	"slices"
)

// CompareTrees opens two versions of one tree for comparison, such as two
// checkpoints of a workspace: base and current must implement
// fs.ReadDirFS and fs.ReadLinkFS, and never follow a symlink. differ, when
// not nil, lists the names in the directory at rel (present in both) whose
// entries may differ, so that subtrees known to be equal are not walked;
// nil compares every name. Every change is reported: there is no host
// folder whose ignore rules would apply.
func CompareTrees(base, current fs.FS, differ func(rel string) ([]string, error)) *Folder {
	f := &Folder{IncludeIgnored: true, base: fsTree{base}, current: fsTree{current}, candidates: differ}
	if differ == nil {
		f.candidates = f.union
	}
	return f
}

// fsTree is a tree read through io/fs.
type fsTree struct{ fsys fs.FS }

func (t fsTree) lstat(rel string) (fs.FileInfo, error) { return fs.Lstat(t.fsys, name(rel)) }

func (t fsTree) names(rel string) ([]string, error) {
	entries, err := fs.ReadDir(t.fsys, name(rel))
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		out = append(out, e.Name())
	}
	slices.Sort(out)
	return out, nil
}

func (t fsTree) open(rel string) (io.ReadCloser, error) { return t.fsys.Open(name(rel)) }

func (t fsTree) readlink(rel string) (string, error) { return fs.ReadLink(t.fsys, name(rel)) }
