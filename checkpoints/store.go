// Package checkpoints keeps a workspace's checkpoints on the server's disk:
// content-addressed objects (each file's bytes, and each directory as a
// tree listing its entries, named by the SHA-256 of their content, as git
// names its objects), one record per checkpoint naming its root tree, the
// journal of a restore in progress and a cache of the files' last known
// state. A checkpoint of a workspace in which 50 files changed adds those
// files and the trees of the directories above them; everything else is
// shared with the checkpoints before it.
//
// Every write is a new file renamed into place, so a process killed at any
// moment leaves the store readable: a checkpoint exists once its record is
// renamed in, and objects of one that never got there are collected later.
//
// A Store is safe for concurrent use by one process; the workspace's owner
// lock keeps other processes out.
package checkpoints

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Layout of a store directory.
const (
	objectsDir   = "objects"
	recordsDir   = "checkpoints"
	tmpDir       = "tmp"
	counterFile  = "next"
	indexFile    = "index"
	journalFile  = "restore.json"
	recordSuffix = ".json"
)

// Errors a Store returns.
var (
	// ErrNotFound means no checkpoint has the ID asked for.
	ErrNotFound = errors.New("no such checkpoint")
	// ErrOverCap means the store would pass its cap, or its disk's room
	// (then the error is also ErrDiskFull).
	ErrOverCap = errors.New("the checkpoint store is full")
	// ErrDiskFull means the disk holding the store has no room for what a
	// checkpoint would write; errors.Is counts it an ErrOverCap too.
	ErrDiskFull error = diskFull{}
	// ErrCorrupt means an object's content does not match its name.
	ErrCorrupt = errors.New("the checkpoint store is damaged")
)

// Checkpoint is one saved state of a workspace.
type Checkpoint struct {
	// ID names the checkpoint in its workspace: "c1", "c2", ...
	ID string `json:"id"`
	// Message is what the caller said about it.
	Message string `json:"message,omitempty"`
	// Auto says why the server took it by itself ("idle", "before restore
	// to c3", "session ended"); empty for one a caller asked for.
	Auto    string    `json:"auto,omitempty"`
	Created time.Time `json:"created"`
	// Root is the hash of the tree of /workspace.
	Root string `json:"root"`
	// Files, Dirs, Symlinks and Fifos count its entries; Bytes sums its
	// files' sizes.
	Files    int   `json:"files"`
	Dirs     int   `json:"dirs"`
	Symlinks int   `json:"symlinks"`
	Fifos    int   `json:"fifos,omitempty"`
	Bytes    int64 `json:"bytes"`
	// Added is what it added to the store, in bytes of new objects.
	Added int64 `json:"added"`
	// Skipped lists entries it could not hold (sockets and devices).
	Skipped []string `json:"skipped,omitempty"`
}

// Store is one workspace's checkpoint store.
type Store struct {
	dir string
	cap int64

	mu        sync.Mutex
	bytes     int64          // total size of the objects, loose and packed
	reserved  int64          // bytes of objects being written (see room.go)
	sinceDisk int64          // bytes reserved since the cache disk was last looked at
	pinned    map[string]int // roots that collection keeps, with their pin counts
	builds    int            // open Builds; collection waits for none
	charge    charge         // what the store is charged to beside its cap (ChargeTo)
	// abandoned says a build that was not committed wrote objects, which
	// the last open build's end collects.
	abandoned bool

	packMu    sync.RWMutex
	packs     map[string]packLoc // packed objects by hash
	packSizes map[string]int64   // packs by name
}

// Open opens the store in dir, creating it when missing, and removes the
// temporary files a killed process left. capBytes bounds the objects'
// total size (0 for no bound).
func Open(dir string, capBytes int64) (*Store, error) {
	for _, d := range []string{objectsDir, packsDir, recordsDir, tmpDir} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, fmt.Errorf("creating the checkpoint store: %w", err)
		}
	}
	s := &Store{dir: dir, cap: capBytes, pinned: map[string]int{}, packs: map[string]packLoc{}, packSizes: map[string]int64{}}
	if err := s.clearTemporary(); err != nil {
		return nil, err
	}
	if err := s.loadPacks(); err != nil {
		return nil, err
	}
	n, err := s.measure()
	if err != nil {
		return nil, err
	}
	s.bytes = n
	return s, nil
}

// Look opens the store in dir to read its checkpoints, changing nothing:
// another process may own it.
func Look(dir string) *Store {
	s := &Store{dir: dir, pinned: map[string]int{}, packs: map[string]packLoc{}, packSizes: map[string]int64{}}
	if entries, err := os.ReadDir(filepath.Join(dir, packsDir)); err == nil {
		for _, e := range entries {
			if name, ok := strings.CutSuffix(e.Name(), ".idx"); ok {
				_ = s.loadPack(name)
			}
		}
	}
	return s
}

// Cap is the bound on the objects' total size, 0 for none.
func (s *Store) Cap() int64 { return s.cap }

// Bytes is the objects' total size.
func (s *Store) Bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}

// clearTemporary removes what writes that never finished left behind.
func (s *Store) clearTemporary() error {
	entries, err := os.ReadDir(filepath.Join(s.dir, tmpDir))
	if err != nil {
		return fmt.Errorf("reading the checkpoint store: %w", err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(s.dir, tmpDir, e.Name())); err != nil {
			return fmt.Errorf("clearing the checkpoint store's temporary files: %w", err)
		}
	}
	return nil
}

// measure sums the sizes of the loose objects and the packs.
func (s *Store) measure() (int64, error) {
	n := int64(0)
	for _, size := range s.packSizes {
		n += size
	}
	err := filepath.WalkDir(filepath.Join(s.dir, objectsDir), func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("measuring the checkpoint store: %w", err)
	}
	return n, nil
}

// Commit records a checkpoint whose root tree and objects are stored,
// giving it the next ID, and returns it. The record is on disk, synced,
// when Commit returns.
func (s *Store) Commit(cp Checkpoint) (Checkpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !validHash(cp.Root) {
		return Checkpoint{}, fmt.Errorf("committing a checkpoint without a root tree")
	}
	n, err := s.nextNumber()
	if err != nil {
		return Checkpoint{}, err
	}
	cp.ID = "c" + strconv.Itoa(n)
	if cp.Created.IsZero() {
		cp.Created = time.Now().UTC()
	}
	if err := syncObjects(s.dir); err != nil {
		return Checkpoint{}, err
	}
	data, err := json.MarshalIndent(cp, "", "  ")
	if err != nil {
		return Checkpoint{}, err
	}
	if err := s.writeFile(filepath.Join(recordsDir, cp.ID+recordSuffix), data, true); err != nil {
		return Checkpoint{}, fmt.Errorf("recording checkpoint %s: %w", cp.ID, err)
	}
	if err := s.writeFile(counterFile, []byte(strconv.Itoa(n+1)+"\n"), true); err != nil {
		return Checkpoint{}, fmt.Errorf("recording checkpoint %s: %w", cp.ID, err)
	}
	return cp, nil
}

// nextNumber returns the number of the next checkpoint: the counter's, or
// one past the highest recorded, whichever is larger (the counter may lag
// a record when the process died between the two writes).
func (s *Store) nextNumber() (int, error) {
	n := 1
	if data, err := os.ReadFile(filepath.Join(s.dir, counterFile)); err == nil {
		if v, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && v > 0 {
			n = v
		}
	}
	list, err := s.list()
	if err != nil {
		return 0, err
	}
	for _, cp := range list {
		if v := idNumber(cp.ID); v >= n {
			n = v + 1
		}
	}
	return n, nil
}

// idNumber is the number in an ID "c<n>", or 0.
func idNumber(id string) int {
	v, err := strconv.Atoi(strings.TrimPrefix(id, "c"))
	if err != nil || !strings.HasPrefix(id, "c") || v <= 0 {
		return 0
	}
	return v
}

// ValidID reports whether id has the form of a checkpoint ID.
func ValidID(id string) bool { return idNumber(id) > 0 && "c"+strconv.Itoa(idNumber(id)) == id }

// List returns the checkpoints, oldest first.
func (s *Store) List() ([]Checkpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.list()
}

func (s *Store) list() ([]Checkpoint, error) {
	entries, err := os.ReadDir(filepath.Join(s.dir, recordsDir))
	if err != nil {
		return nil, fmt.Errorf("listing checkpoints: %w", err)
	}
	var out []Checkpoint
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), recordSuffix)
		if !ok || !ValidID(id) {
			continue
		}
		cp, err := s.read(id)
		if err != nil {
			return nil, err
		}
		out = append(out, cp)
	}
	slices.SortFunc(out, func(a, b Checkpoint) int { return idNumber(a.ID) - idNumber(b.ID) })
	return out, nil
}

// Get returns the checkpoint with this ID.
func (s *Store) Get(id string) (Checkpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.read(id)
}

func (s *Store) read(id string) (Checkpoint, error) {
	if !ValidID(id) {
		//lint:ignore ST1005 the model reads this message: the ellipsis ends the example of the IDs' form, not a sentence
		return Checkpoint{}, fmt.Errorf("%w %q: checkpoint IDs look like c1, c2, ...", ErrNotFound, id)
	}
	data, err := os.ReadFile(filepath.Join(s.dir, recordsDir, id+recordSuffix))
	if errors.Is(err, fs.ErrNotExist) {
		return Checkpoint{}, fmt.Errorf("%w %q", ErrNotFound, id)
	}
	if err != nil {
		return Checkpoint{}, fmt.Errorf("reading checkpoint %s: %w", id, err)
	}
	var cp Checkpoint
	if err := json.Unmarshal(data, &cp); err != nil || cp.ID != id || !validHash(cp.Root) {
		return Checkpoint{}, fmt.Errorf("%w: the record of checkpoint %s cannot be read", ErrCorrupt, id)
	}
	return cp, nil
}

// Delete removes checkpoints and the objects no other checkpoint needs,
// returning the bytes freed.
func (s *Store) Delete(ids ...string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if _, err := s.read(id); err != nil {
			return 0, err
		}
	}
	for _, id := range ids {
		if err := os.Remove(filepath.Join(s.dir, recordsDir, id+recordSuffix)); err != nil {
			return 0, fmt.Errorf("deleting checkpoint %s: %w", id, err)
		}
	}
	return s.collect()
}

// Pin keeps the objects of root until the returned function is called,
// whether or not a checkpoint names it (a diff reads a state of "now"
// that no checkpoint holds).
func (s *Store) Pin(root string) (unpin func()) {
	s.mu.Lock()
	s.pinned[root]++
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.pinned[root]--; s.pinned[root] <= 0 {
			delete(s.pinned, root)
		}
	}
}

// writeFile writes data to name under the store atomically; with sync it
// is on disk when writeFile returns.
func (s *Store) writeFile(name string, data []byte, sync bool) error {
	f, err := os.CreateTemp(filepath.Join(s.dir, tmpDir), "write-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	dst := filepath.Join(s.dir, name)
	if err == nil {
		err = os.Rename(f.Name(), dst)
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	if sync {
		syncDir(filepath.Dir(dst))
	}
	return nil
}

// syncDir makes the entries of dir durable; failures are ignored (a
// process killed loses nothing, only a machine's crash would).
func syncDir(dir string) {
	if f, err := os.Open(dir); err == nil {
		_ = f.Sync()
		f.Close()
	}
}

// FormatBytes renders n in the largest binary unit that keeps it at least 1.
func FormatBytes(n int64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/1024, 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, units[i])
}
