package agent

import (
	"maps"
	"slices"
	"strings"
)

// Bounds of a changeSet: past maxPendingFiles paths, a change is folded
// into its directory, and past maxPendingFolds directories, into its
// top-level one, or into the workspace itself.
const (
	maxPendingFiles = 4096
	maxPendingFolds = 512
)

// changeSet is the set of paths changed since the last report, coalesced:
// a path changed many times is one entry, and a burst of more paths than
// the set holds is folded into the directories it happened in, so its size
// stays bounded however many changes arrive. It is not safe for concurrent use.
type changeSet struct {
	files map[string]struct{}
	folds map[string]int // directory ("" for the workspace) → changes folded into it
}

// empty says nothing is pending.
func (c *changeSet) empty() bool { return len(c.files) == 0 && len(c.folds) == 0 }

// add records a change of p.
func (c *changeSet) add(p string) {
	c.init()
	if c.foldInto(p) {
		return
	}
	if _, ok := c.files[p]; ok {
		return
	}
	if len(c.files) < maxPendingFiles {
		c.files[p] = struct{}{}
		return
	}
	dir := parentOf(p)
	switch {
	case len(c.folds) < maxPendingFolds:
	case strings.Contains(dir, "/"):
		dir, _, _ = strings.Cut(dir, "/")
		if _, ok := c.folds[dir]; !ok {
			dir = "" // even the top-level directories are too many
		}
	default:
		dir = ""
	}
	c.folds[dir]++
}

// foldInto counts a change of p in a folded directory above it, if there is one.
func (c *changeSet) foldInto(p string) bool {
	for d := p; ; d = parentOf(d) {
		if n, ok := c.folds[d]; ok {
			c.folds[d] = n + 1
			return true
		}
		if d == "" {
			return false
		}
	}
}

// addAll records that anything may have changed: after the kernel's
// queue of events overflowed.
func (c *changeSet) addAll() {
	c.init()
	c.folds[""]++
}

func (c *changeSet) init() {
	if c.files == nil {
		c.files, c.folds = map[string]struct{}{}, map[string]int{}
	}
}

// forget drops the pending changes of p and of everything under it (a
// change the agent's own tools made, which they report themselves).
func (c *changeSet) forget(p string) {
	for f := range c.files {
		if f == p || isAncestor(p, f) {
			delete(c.files, f)
		}
	}
}

// pendingEntry is one entry a changeSet hands out.
type pendingEntry struct {
	path   string
	folded int // > 0 for a folded directory
}

// take removes and returns at most n entries, folded directories first,
// each group in path order.
func (c *changeSet) take(n int) []pendingEntry {
	out := make([]pendingEntry, 0, min(n, len(c.files)+len(c.folds)))
	for _, d := range slices.Sorted(maps.Keys(c.folds)) {
		if len(out) == n {
			return out
		}
		out = append(out, pendingEntry{path: d, folded: c.folds[d]})
		delete(c.folds, d)
	}
	for _, p := range slices.Sorted(maps.Keys(c.files)) {
		if len(out) == n {
			return out
		}
		out = append(out, pendingEntry{path: p})
		delete(c.files, p)
	}
	return out
}

// parentOf is the directory of a workspace path; "" for a top-level entry.
func parentOf(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return ""
	}
	return p[:i]
}
