package changes

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// KindDir is the kind of a Change that stands for a Group.
const KindDir Kind = "directory"

// MaxCounted bounds the entries (directories included) counted for the
// groups of one listing; past it a group's count is a lower bound
// (Group.Capped). Counting costs a directory read and an fstatat per
// entry, about a microsecond.
const MaxCounted = 1 << 20

// Group makes a Change stand for many paths a patch leaves out, reported
// as one line rather than path by path: a directory the session created
// that the host folder ignores (or a new .git), with everything under it;
// the new ignored files directly in one existing directory, under one
// rule; or every change under .git. Its Path is the directory; its New
// entry is KindDir, sized Bytes.
type Group struct {
	// Files counts the paths in the group (files, symlinks and others;
	// directories are not counted), and Bytes their apparent size.
	Files int
	Bytes int64
	// NewDir is true when the directory itself is new and the group is
	// all it holds, which is then counted without being compared.
	NewDir bool
	// Capped is true when counting stopped at MaxCounted; Files and Bytes
	// are then lower bounds.
	Capped bool
}

// describe says what the group holds, for a left-out line: new files
// when ignored, else changed paths (under .git).
func (g *Group) describe(ignored bool) string {
	n := fmt.Sprint(g.Files)
	if g.Capped {
		n = "at least " + n
	}
	switch {
	case g.NewDir:
		return fmt.Sprintf("a new directory: %s %s, %d bytes", n, plural(g.Files, "file"), g.Bytes)
	case ignored:
		return fmt.Sprintf("%s new %s, %d bytes", n, plural(g.Files, "file"), g.Bytes)
	}
	return fmt.Sprintf("%s changed %s", n, plural(g.Files, "path"))
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// dirName is how a line names the directory at rel: with a slash after it,
// and the folder itself as "./".
func dirName(rel string) string {
	if rel == "" {
		return "./"
	}
	return strings.TrimSuffix(rel, "/") + "/"
}

// underGit reports whether rel is .git or under it.
func underGit(rel string) bool { return rel == ".git" || strings.HasPrefix(rel, ".git/") }

// wholeDir says whether the new directory at rel is summarised as one
// group rather than walked, and the ignore rule that ignores it ("" for
// .git, which every patch leaves out).
func (f *Folder) wholeDir(rel string) (rule string, ok bool) {
	if underGit(rel) {
		return "", true
	}
	if f.IncludeIgnored {
		return "", false
	}
	rule = f.rules().ignoredBy(rel, true)
	return rule, rule != ""
}

func (f *Folder) rules() *ignoreRules {
	if f.ignore == nil {
		f.ignore = newIgnoreRules(f.base)
	}
	return f.ignore
}

// classify folds, out of changes, the ones a patch leaves out as groups:
// every change under .git into one group, and the new files the host
// folder ignores (unless it includes them) into one group per directory
// and rule. The changes kept come first, in their order; the groups
// follow, by path.
func (f *Folder) classify(changes []Change) []Change {
	type key struct{ dir, rule string }
	groups := map[key]*Change{}
	var kept, folded []Change
	add := func(k key, c Change) {
		g, ok := groups[k]
		if !ok {
			g = &Change{Path: k.dir, New: &Entry{Kind: KindDir}, Ignored: k.rule, Group: &Group{}}
			if k.rule == "" {
				g.Old = &Entry{Kind: KindDir}
			}
			groups[k] = g
		}
		if c.Group != nil {
			g.Group.Files += c.Group.Files
			g.Group.Bytes += c.Group.Bytes
			g.Group.Capped = g.Group.Capped || c.Group.Capped
		} else {
			g.Group.Files++
			if c.New != nil {
				g.Group.Bytes += c.New.Size
			}
		}
		g.New.Size = g.Group.Bytes
	}
	for _, c := range changes {
		switch {
		case c.Group != nil && c.Group.NewDir:
			folded = append(folded, c) // already one line
		case underGit(c.Path):
			add(key{dir: ".git"}, c)
		case c.Old == nil && !f.IncludeIgnored:
			if rule := f.rules().ignoredBy(c.Path, false); rule != "" {
				add(key{dir: path.Dir(c.Path), rule: rule}, c)
				continue
			}
			kept = append(kept, c)
		default:
			kept = append(kept, c)
		}
	}
	for _, g := range groups {
		if g.Path == "." {
			g.Path = ""
		}
		folded = append(folded, *g)
	}
	slices.SortFunc(folded, func(a, b Change) int { return strings.Compare(a.Path+"\x00"+a.Ignored, b.Path+"\x00"+b.Ignored) })
	return append(kept, folded...)
}

// group counts the new directory at rel of the current tree as one change.
func (c *comparison) group(rel, rule string) error {
	g := &Group{NewDir: true}
	err := c.counter.count(c.current, rel, g)
	if err != nil && !errors.Is(err, errBudget) && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	c.out = append(c.out, Change{Path: rel, New: &Entry{Kind: KindDir, Size: g.Bytes}, Ignored: rule, Group: g})
	return nil
}
