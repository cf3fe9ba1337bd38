package workspace

import (
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

// snapshot records the files a session's tools touched. It is safe for concurrent use.
type snapshot struct {
	mu    sync.Mutex
	files map[string]*TouchedFile
}

// wrote records a write or edit of path and returns the file's new version.
func (s *snapshot) wrote(path string, size int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now().UTC()
	if s.files == nil {
		s.files = map[string]*TouchedFile{}
	}
	f, ok := s.files[path]
	if !ok {
		f = &TouchedFile{Path: path, Created: now}
		s.files[path] = f
	}
	f.SizeBytes, f.Deleted, f.Updated = size, false, now
	f.Version++
	return f.Version
}

// removed records the removal of path and of everything under it, and
// returns the touched paths it affected, path included, sorted.
func (s *snapshot) removed(path string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now().UTC()
	if s.files == nil {
		s.files = map[string]*TouchedFile{}
	}
	if _, ok := s.files[path]; !ok {
		s.files[path] = &TouchedFile{Path: path, Created: now}
	}
	var affected []string
	for p, f := range s.files {
		if p == path || strings.HasPrefix(p, path+"/") {
			f.Deleted, f.SizeBytes, f.Updated = true, 0, now
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
		out = append(out, *f)
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
