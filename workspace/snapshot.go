package workspace

import (
	pathpkg "path"
	"slices"
	"strings"
	"sync"
	"time"
)

// TouchedFile is one entry of a session's snapshot: a file its tools wrote,
// edited or removed. Version counts the writes and edits.
type TouchedFile struct {
	Path      string    `json:"path"`
	SizeBytes int64     `json:"size_bytes"`
	Version   int       `json:"version"`
	Created   time.Time `json:"created"`
	Updated   time.Time `json:"updated"`
	Deleted   bool      `json:"deleted"`
}

// snapshot records the files a session's tools touched. It is safe for
// concurrent use. Concurrent calls answer in any order, so each change
// carries the agent's sequence number, and a file's state is that of the
// latest change by sequence, not by arrival.
type snapshot struct {
	mu    sync.Mutex
	files map[string]*touched
}

// touched is a TouchedFile and the sequence of the change that set its state.
type touched struct {
	TouchedFile
	seq int64
}

// entry returns the record of path, creating it.
func (s *snapshot) entry(path string, now time.Time) *touched {
	if s.files == nil {
		s.files = map[string]*touched{}
	}
	f, ok := s.files[path]
	if !ok {
		f = &touched{TouchedFile: TouchedFile{Path: path, Created: now}}
		s.files[path] = f
	}
	return f
}

// wrote records a write or edit of path, the agent's change seq, and
// returns the file's new version.
func (s *snapshot) wrote(path string, size, seq int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now().UTC()
	f := s.entry(path, now)
	if seq >= f.seq {
		f.SizeBytes, f.Deleted, f.Updated, f.seq = size, false, now, seq
		// A later removal of a directory above it, answered first, undid it.
		for dir := pathpkg.Dir(path); dir != "."; dir = pathpkg.Dir(dir) {
			if d, ok := s.files[dir]; ok && d.Deleted && d.seq > f.seq {
				f.SizeBytes, f.Deleted, f.seq = 0, true, d.seq
			}
		}
	}
	f.Version++
	return f.Version
}

// removed records the removal of path and of everything under it, the
// agent's change seq, and returns the touched paths it affected, path
// included, sorted.
func (s *snapshot) removed(path string, seq int64) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now().UTC()
	s.entry(path, now)
	var affected []string
	for p, f := range s.files {
		if (p == path || strings.HasPrefix(p, path+"/")) && seq >= f.seq {
			f.Deleted, f.SizeBytes, f.Updated, f.seq = true, 0, now, seq
			affected = append(affected, p)
		}
	}
	slices.Sort(affected)
	return affected
}

// list returns the touched files sorted by path.
func (s *snapshot) list() []TouchedFile {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]TouchedFile, 0, len(s.files))
	for _, f := range s.files {
		out = append(out, f.TouchedFile)
	}
	slices.SortFunc(out, func(a, b TouchedFile) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// reset forgets everything, as when the workspace is emptied.
func (s *snapshot) reset() {
	s.mu.Lock()
	s.files = nil
	s.mu.Unlock()
}

// paths returns the touched paths, sorted.
func (s *snapshot) paths() []string {
	list := s.list()
	out := make([]string, len(list))
	for i, f := range list {
		out[i] = f.Path
	}
	return out
}
