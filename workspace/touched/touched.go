// Package touched records the files a session's tools and commands
// wrote, edited or removed (workspace_info's snapshot and the watch's
// reports).
//
// Its one lock, Snapshot.mu, guards the record; it is a leaf.
package touched

import (
	pathpkg "path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wink-mcp/wink-mcp/wire"
)

// Who changed a file, in TouchedFile.ChangedBy.
const (
	// ByTool is a change of the file tools or of evaluate_python's writes.
	ByTool = "tool"
	// ByCommand is a change a process made: a command, a job, the code
	// evaluate_python ran.
	ByCommand = "command"
)

// MaxSnapshotFiles bounds the entries of a snapshot: past it, a change a
// command makes to a path not yet listed is counted in the entry of its
// top-level directory, or, when that is not listed either, as unlisted.
const MaxSnapshotFiles = 10_000

// TouchedFile is one entry of a session's snapshot: a file its tools or
// its commands wrote, edited or removed. Version counts the writes.
type TouchedFile struct {
	Path      string    `json:"path"`
	SizeBytes int64     `json:"size_bytes"`
	Version   int       `json:"version"`
	Created   time.Time `json:"created"`
	Updated   time.Time `json:"updated"`
	Deleted   bool      `json:"deleted"`
	// ChangedBy says who made the latest change: ByTool or ByCommand.
	ChangedBy string `json:"changed_by"`
	// Folded, on a directory, counts the changes commands made under it
	// that were too many to list one by one.
	Folded int `json:"folded,omitempty"`
}

// Snapshot records the files a session's tools and commands touched; its
// zero value records nothing yet. It is safe for concurrent use. Concurrent calls answer in any order, so each
// change carries the agent's sequence number, and a file's state is that of
// the latest change by sequence, not by arrival.
type Snapshot struct {
	mu    sync.Mutex
	files map[string]*touched
	// below counts the listed paths under each directory, so that a
	// removal with nothing listed below it (a command's removal of each
	// of 10,000 files) need not look at every listed path.
	below map[string]int
	// unlisted counts the changes too many to list even by directory.
	unlisted int
}

// touched is a TouchedFile and the sequence of the change that set its state.
type touched struct {
	TouchedFile
	seq int64
}

// entry returns the record of path, creating it.
func (s *Snapshot) entry(path string, now time.Time) *touched {
	if s.files == nil {
		s.files, s.below = map[string]*touched{}, map[string]int{}
	}
	f, ok := s.files[path]
	if !ok {
		f = &touched{TouchedFile: TouchedFile{Path: path, Created: now}}
		s.files[path] = f
		for dir := pathpkg.Dir(path); dir != "." && dir != "/"; dir = pathpkg.Dir(dir) {
			s.below[dir]++
		}
	}
	return f
}

// Wrote records a write or edit of path by a tool, the agent's change
// seq, and returns the file's new version.
func (s *Snapshot) Wrote(path string, size, seq int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wroteLocked(s.entry(path, time.Now().UTC()), size, seq, ByTool)
}

func (s *Snapshot) wroteLocked(f *touched, size, seq int64, by string) int {
	if seq >= f.seq {
		f.SizeBytes, f.Deleted, f.Updated, f.seq, f.ChangedBy = size, false, time.Now().UTC(), seq, by
		// A later removal of a directory above it, answered first, undid it.
		for dir := pathpkg.Dir(f.Path); dir != "."; dir = pathpkg.Dir(dir) {
			if d, ok := s.files[dir]; ok && d.Deleted && d.seq > f.seq {
				f.SizeBytes, f.Deleted, f.seq = 0, true, d.seq
			}
		}
	}
	f.Version++
	return f.Version
}

// Removed records the removal of path and of everything under it by a
// tool, the agent's change seq, and returns the touched paths it
// affected, path included, sorted.
func (s *Snapshot) Removed(path string, seq int64) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.removedLocked(path, seq, ByTool)
}

func (s *Snapshot) removedLocked(path string, seq int64, by string) []string {
	now := time.Now().UTC()
	f := s.entry(path, now)
	remove := func(p string, f *touched) []string {
		if seq < f.seq {
			return nil
		}
		f.Deleted, f.SizeBytes, f.Updated, f.seq, f.ChangedBy = true, 0, now, seq, by
		return []string{p}
	}
	affected := remove(path, f)
	if s.below[path] == 0 {
		return affected
	}
	prefix := path + "/"
	for p, f := range s.files {
		if strings.HasPrefix(p, prefix) {
			affected = append(affected, remove(p, f)...)
		}
	}
	slices.Sort(affected)
	return affected
}

// Commanded records the changes the agent saw processes make and returns
// the paths whose subscribers should hear of them ("" for all).
func (s *Snapshot) Commanded(changes []wire.Change) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var affected []string
	for _, c := range changes {
		affected = append(affected, c.Path)
		if c.Unwatched {
			continue // it may have changed: subscribers look, the snapshot cannot say
		}
		f := s.listedLocked(c)
		switch {
		case f == nil:
		case c.Folded > 0 || f.Folded > 0:
			f.Folded += max(c.Folded, 1)
			if c.Seq >= f.seq {
				f.Deleted, f.Updated, f.seq, f.ChangedBy = c.Removed, time.Now().UTC(), c.Seq, ByCommand
			}
		case c.Removed:
			s.removedLocked(c.Path, c.Seq, ByCommand)
		case c.Dir:
			// A directory where a listed file was: the file is gone.
			if !f.Deleted && c.Seq >= f.seq && f.Version > 0 {
				f.Deleted, f.SizeBytes, f.Updated, f.seq, f.ChangedBy = true, 0, time.Now().UTC(), c.Seq, ByCommand
			}
		default:
			s.wroteLocked(f, c.SizeBytes, c.Seq, ByCommand)
		}
	}
	return affected
}

// listedLocked returns the entry a command's change is recorded in: the
// path's own, or, once the snapshot is full, its top-level directory's,
// which then counts it as folded; nil when even that is not listed, and
// the change is only counted.
func (s *Snapshot) listedLocked(c wire.Change) *touched {
	if c.Path == "" {
		s.unlisted += max(c.Folded, 1)
		return nil
	}
	if _, ok := s.files[c.Path]; ok || len(s.files) < MaxSnapshotFiles {
		if !ok && c.Dir && c.Folded == 0 {
			return nil // a directory made where no listed file was: nothing to record
		}
		return s.entry(c.Path, time.Now().UTC())
	}
	top, _, _ := strings.Cut(c.Path, "/")
	if f, ok := s.files[top]; ok {
		f.Folded++
		return nil
	}
	s.unlisted++
	return nil
}

// List returns the touched files sorted by path.
func (s *Snapshot) List() []TouchedFile {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]TouchedFile, 0, len(s.files))
	for _, f := range s.files {
		out = append(out, f.TouchedFile)
	}
	slices.SortFunc(out, func(a, b TouchedFile) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// Reset forgets everything, as when the workspace is emptied.
func (s *Snapshot) Reset() {
	s.mu.Lock()
	s.files, s.below, s.unlisted = nil, nil, 0
	s.mu.Unlock()
}

// UnlistedChanges counts the changes too many to list even by directory.
func (s *Snapshot) UnlistedChanges() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unlisted
}

// Paths returns the touched paths, sorted.
func (s *Snapshot) Paths() []string {
	list := s.List()
	out := make([]string, len(list))
	for i, f := range list {
		out[i] = f.Path
	}
	return out
}
