package checkpoints

import (
	"bufio"
	"encoding/gob"
	"os"
	"path/filepath"
)

// Stat is what a scan saw of a file: enough to tell, without reading it,
// that it has not changed since. The change time cannot be set by a
// process, and moves on every write.
type Stat struct {
	Size  int64
	Mtime int64 // nanoseconds
	Ctime int64 // nanoseconds
	Ino   uint64
}

// Known is a file whose content hash is known for a Stat.
type Known struct {
	Stat
	Hash string
}

// Index maps workspace paths to the last known state of their files. It is
// a cache: a missing or damaged index only costs reading the files again.
type Index map[string]Known

// LoadIndex returns the saved index, empty when there is none.
func (s *Store) LoadIndex() Index {
	f, err := os.Open(filepath.Join(s.dir, indexFile))
	if err != nil {
		return Index{}
	}
	defer f.Close()
	var idx Index
	if gob.NewDecoder(bufio.NewReader(f)).Decode(&idx) != nil || idx == nil {
		return Index{}
	}
	return idx
}

// SaveIndex replaces the saved index.
func (s *Store) SaveIndex(idx Index) error {
	f, err := os.CreateTemp(filepath.Join(s.dir, tmpDir), "index-*")
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	err = gob.NewEncoder(w).Encode(idx)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(s.dir, indexFile))
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
