package checkpoints

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Journal records a restore in progress: the checkpoint the workspace is
// being brought to, and the automatic checkpoint of the state it left, to
// go back to when the restore cannot finish. It is on disk before the first
// file changes and removed once the last has, so a process killed between
// the two leaves it for the next owner of the workspace to finish.
type Journal struct {
	Target       string    `json:"target"`
	TargetRoot   string    `json:"target_root"`
	Fallback     string    `json:"fallback,omitempty"`
	FallbackRoot string    `json:"fallback_root,omitempty"`
	Started      time.Time `json:"started"`
	// Hibernated says the restore brings back the files of a container
	// removed with them, into the next one, rather than a checkpoint the
	// model chose: a reset of the workspace drops it.
	Hibernated bool `json:"hibernated,omitempty"`
}

// roots are the trees a pending restore may still need.
func (j *Journal) roots() []string {
	roots := []string{j.TargetRoot}
	if j.FallbackRoot != "" {
		roots = append(roots, j.FallbackRoot)
	}
	return roots
}

// BeginRestore records a restore about to start, synced to disk.
func (s *Store) BeginRestore(j Journal) error {
	if !validHash(j.TargetRoot) || (j.FallbackRoot != "" && !validHash(j.FallbackRoot)) {
		return errors.New("a restore journal needs the roots of its checkpoints")
	}
	data, err := json.Marshal(j)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writeFile(journalFile, data, true); err != nil {
		return fmt.Errorf("recording the restore: %w", err)
	}
	return nil
}

// EndRestore removes the journal of a finished restore.
func (s *Store) EndRestore() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := os.Remove(filepath.Join(s.dir, journalFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("closing the restore journal: %w", err)
	}
	syncDir(s.dir)
	return nil
}

// PendingRestore returns the journal of a restore that did not finish, or
// nil when there is none.
func (s *Store) PendingRestore() (*Journal, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pendingRestore()
}

func (s *Store) pendingRestore() (*Journal, error) {
	data, err := os.ReadFile(filepath.Join(s.dir, journalFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the restore journal: %w", err)
	}
	var j Journal
	if err := json.Unmarshal(data, &j); err != nil || !validHash(j.TargetRoot) {
		return nil, fmt.Errorf("%w: the restore journal cannot be read", ErrCorrupt)
	}
	return &j, nil
}
