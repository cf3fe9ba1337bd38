package checkpoints

import (
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// Entry kinds in a tree.
const (
	KindFile    = "file"
	KindDir     = "dir"
	KindSymlink = "symlink"
	KindFifo    = "fifo"
)

// Entry is one name in a directory's tree.
type Entry struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Mode holds the permission bits with setuid, setgid and sticky (07777).
	Mode uint32 `json:"mode"`
	// Size is a file's size.
	Size int64 `json:"size,omitempty"`
	// Hash names a file's content, or a directory's tree.
	Hash string `json:"hash,omitempty"`
	// Target is a symlink's target.
	Target string `json:"target,omitempty"`
}

// entryJSON is Entry as stored: a name or target that is not UTF-8 (a
// command may make any name) is kept as its bytes, which JSON's strings
// cannot carry.
type entryJSON struct {
	Name        string `json:"name,omitempty"`
	NameBytes   []byte `json:"name_bytes,omitempty"`
	Kind        string `json:"kind"`
	Mode        uint32 `json:"mode"`
	Size        int64  `json:"size,omitempty"`
	Hash        string `json:"hash,omitempty"`
	Target      string `json:"target,omitempty"`
	TargetBytes []byte `json:"target_bytes,omitempty"`
}

// MarshalJSON keeps the name and target exactly.
func (e Entry) MarshalJSON() ([]byte, error) {
	j := entryJSON{Kind: e.Kind, Mode: e.Mode, Size: e.Size, Hash: e.Hash}
	j.Name, j.NameBytes = exact(e.Name)
	j.Target, j.TargetBytes = exact(e.Target)
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (e *Entry) UnmarshalJSON(data []byte) error {
	var j entryJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*e = Entry{Name: j.Name, Kind: j.Kind, Mode: j.Mode, Size: j.Size, Hash: j.Hash, Target: j.Target}
	if j.NameBytes != nil {
		e.Name = string(j.NameBytes)
	}
	if j.TargetBytes != nil {
		e.Target = string(j.TargetBytes)
	}
	return nil
}

// exact splits s into the text JSON carries as is, or its bytes.
func exact(s string) (string, []byte) {
	if utf8.ValidString(s) {
		return s, nil
	}
	return "", []byte(s)
}

// Build writes the objects of one checkpoint; it is safe for concurrent
// use. While any Build is open the store collects nothing, so objects
// written for a checkpoint not yet committed are never taken. Done (or
// Abort, for a checkpoint that will not be committed) must be called.
type Build struct {
	s     *Store
	added atomic.Int64

	mu           sync.Mutex
	pending      map[string][]byte // small objects for the next pack
	pendingBytes int
}

// Build starts writing objects.
func (s *Store) Build() *Build {
	s.mu.Lock()
	s.builds++
	s.mu.Unlock()
	return &Build{s: s}
}

// Flush writes the small objects held in memory as a pack; Commit of a
// checkpoint whose objects the build wrote must come after it.
func (b *Build) Flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.flushLocked()
}

func (b *Build) flushLocked() error {
	if len(b.pending) == 0 {
		return nil
	}
	size, err := b.s.writePack(b.pending)
	if err != nil {
		return err
	}
	b.s.stored(int64(b.pendingBytes), size)
	b.added.Add(size)
	b.pending, b.pendingBytes = nil, 0
	return nil
}

// Done ends the build; objects not flushed are dropped.
func (b *Build) Done() { b.end(false) }

// Added is the size of the objects this build added to the store.
func (b *Build) Added() int64 { return b.added.Load() }

// Has reports whether the object named hash is stored.
func (s *Store) Has(hash string) bool {
	if !validHash(hash) {
		return false
	}
	s.packMu.RLock()
	_, packed := s.packs[hash]
	s.packMu.RUnlock()
	if packed {
		return true
	}
	_, err := os.Lstat(s.objectPath(hash))
	return err == nil
}

func (s *Store) objectPath(hash string) string {
	return filepath.Join(s.dir, objectsDir, hash[:2], hash[2:])
}

// BlobWriter receives one file's content and stores it under its hash.
// Each write is reserved against the store's cap and disk first.
type BlobWriter struct {
	b *Build
	f *os.File
	h hash.Hash
	n int64
}

// NewBlob starts writing a blob; Commit or Abort must be called.
func (b *Build) NewBlob() (*BlobWriter, error) {
	f, err := os.CreateTemp(filepath.Join(b.s.dir, tmpDir), "blob-*")
	if err != nil {
		return nil, fmt.Errorf("writing to the checkpoint store: %w", err)
	}
	return &BlobWriter{b: b, f: f, h: sha256.New()}, nil
}

// Write adds content, or fails with ErrOverCap, writing nothing, when it
// would pass the store's cap or fill its disk.
func (w *BlobWriter) Write(p []byte) (int, error) {
	if err := w.b.s.reserve(int64(len(p))); err != nil {
		return 0, err
	}
	n, err := w.f.Write(p)
	w.h.Write(p[:n])
	w.n += int64(n)
	w.b.s.release(int64(len(p) - n))
	return n, err
}

// Abort discards the blob.
func (w *BlobWriter) Abort() {
	w.f.Close()
	os.Remove(w.f.Name())
	w.b.s.release(w.n)
}

// Commit stores the blob and returns its hash. A blob already stored is
// not stored twice.
func (w *BlobWriter) Commit() (string, error) {
	sum := hex.EncodeToString(w.h.Sum(nil))
	if err := w.f.Close(); err != nil {
		os.Remove(w.f.Name())
		w.b.s.release(w.n)
		return "", fmt.Errorf("writing to the checkpoint store: %w", err)
	}
	return sum, w.b.place(w.f.Name(), sum, w.n)
}

// place renames the temporary file tmp, of size reserved bytes, into the
// store as the object sum.
func (b *Build) place(tmp, sum string, size int64) error {
	s := b.s
	dst := s.objectPath(sum)
	fail := func(err error) error {
		os.Remove(tmp)
		s.release(size)
		return err
	}
	if _, err := os.Lstat(dst); err == nil {
		return fail(nil)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return fail(fmt.Errorf("writing to the checkpoint store: %w", err))
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fail(fmt.Errorf("writing to the checkpoint store: %w", err))
	}
	s.stored(size, size)
	b.added.Add(size)
	return nil
}

// PutBlob stores data and returns its hash; content already stored is
// not written again. Small content waits in memory for the build's next
// pack (Flush).
func (b *Build) PutBlob(data []byte) (string, error) {
	raw := sha256.Sum256(data)
	sum := hex.EncodeToString(raw[:])
	if b.s.Has(sum) {
		return sum, nil
	}
	if len(data) <= packMaxObject {
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, ok := b.pending[sum]; !ok {
			// Reserved now: the pack that will hold it is written later.
			if err := b.s.reserve(int64(len(data))); err != nil {
				return "", err
			}
			if b.pending == nil {
				b.pending = map[string][]byte{}
			}
			b.pending[sum] = slices.Clone(data)
			b.pendingBytes += len(data)
		}
		if b.pendingBytes >= packFlushBytes {
			return sum, b.flushLocked()
		}
		return sum, nil
	}
	w, err := b.NewBlob()
	if err != nil {
		return "", err
	}
	if _, err := w.Write(data); err != nil {
		w.Abort()
		return "", fmt.Errorf("writing to the checkpoint store: %w", err)
	}
	return w.Commit()
}

// PutTree stores a directory's entries, sorted by name, and returns the
// tree's hash.
func (b *Build) PutTree(entries []Entry) (string, error) {
	entries = slices.Clone(entries)
	slices.SortFunc(entries, func(x, y Entry) int { return strings.Compare(x.Name, y.Name) })
	if entries == nil {
		entries = []Entry{}
	}
	data, err := json.Marshal(entries)
	if err != nil {
		return "", err
	}
	var packed bytes.Buffer
	zw, _ := flate.NewWriter(&packed, flate.BestSpeed)
	zw.Write(data)
	if err := zw.Close(); err != nil {
		return "", err
	}
	return b.PutBlob(packed.Bytes())
}

// maxTreeBytes bounds a tree's JSON once inflated: a damaged or hostile
// store cannot make a reader inflate without end.
const maxTreeBytes = 256 << 20

// OpenBlob opens a stored file's content. The reader fails with ErrCorrupt
// at its end when the content does not match its name.
func (s *Store) OpenBlob(sum string) (io.ReadCloser, error) {
	if !validHash(sum) {
		return nil, fmt.Errorf("%w: %q names no object", ErrCorrupt, sum)
	}
	if r, packed, err := s.openPacked(sum); packed {
		if err != nil {
			return nil, err
		}
		return &verifier{r: r, h: sha256.New(), want: sum}, nil
	}
	f, err := os.Open(s.objectPath(sum))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: object %s is missing", ErrCorrupt, sum)
	}
	if err != nil {
		return nil, err
	}
	return &verifier{r: f, h: sha256.New(), want: sum}, nil
}

// verifier checks what it read against the name it was opened by.
type verifier struct {
	r    io.ReadCloser
	h    hash.Hash
	want string
}

func (v *verifier) Read(p []byte) (int, error) {
	n, err := v.r.Read(p)
	v.h.Write(p[:n])
	if errors.Is(err, io.EOF) && hex.EncodeToString(v.h.Sum(nil)) != v.want {
		return n, fmt.Errorf("%w: object %s does not match its content", ErrCorrupt, v.want)
	}
	return n, err
}

func (v *verifier) Close() error { return v.r.Close() }

// ReadTree returns a stored directory's entries, sorted by name.
func (s *Store) ReadTree(sum string) ([]Entry, error) {
	r, err := s.OpenBlob(sum)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	// Trees are stored deflated: most of a tree is names and hashes, and a
	// checkpoint that changes files in many directories adds their trees.
	data, err := io.ReadAll(io.LimitReader(flate.NewReader(r), maxTreeBytes+1))
	if err == nil && len(data) > maxTreeBytes {
		err = fmt.Errorf("%w: tree %s inflates past %d bytes", ErrCorrupt, sum, maxTreeBytes)
	}
	if err != nil {
		if !errors.Is(err, ErrCorrupt) {
			err = fmt.Errorf("%w: tree %s cannot be read: %v", ErrCorrupt, sum, err)
		}
		return nil, err
	}
	var entries []Entry
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&entries); err != nil {
		return nil, fmt.Errorf("%w: tree %s cannot be read: %v", ErrCorrupt, sum, err)
	}
	for _, e := range entries {
		if err := e.check(); err != nil {
			return nil, fmt.Errorf("%w: tree %s: %v", ErrCorrupt, sum, err)
		}
	}
	return entries, nil
}

// check refuses an entry that no scan of a workspace makes.
func (e Entry) check() error {
	switch {
	case e.Name == "" || e.Name == "." || e.Name == ".." || strings.ContainsAny(e.Name, "/\x00"):
		return fmt.Errorf("bad name %q", e.Name)
	case e.Mode&^0o7777 != 0:
		return fmt.Errorf("%q: bad mode %o", e.Name, e.Mode)
	}
	switch e.Kind {
	case KindFile, KindDir:
		if !validHash(e.Hash) {
			return fmt.Errorf("%q: bad hash", e.Name)
		}
	case KindSymlink, KindFifo:
	default:
		return fmt.Errorf("%q: unknown kind %q", e.Name, e.Kind)
	}
	return nil
}

func validHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil && strings.ToLower(h) == h
}

// collect deletes the objects that no checkpoint, pinned root or pending
// restore reaches. It does nothing while a Build is open. s.mu is held.
func (s *Store) collect() (int64, error) {
	if s.builds > 0 {
		return 0, nil
	}
	roots := make([]string, 0, len(s.pinned))
	for r := range s.pinned {
		roots = append(roots, r)
	}
	list, err := s.list()
	if err != nil {
		return 0, err
	}
	for _, cp := range list {
		roots = append(roots, cp.Root)
	}
	if j, err := s.pendingRestore(); err == nil && j != nil {
		roots = append(roots, j.roots()...)
	}
	live := map[string]bool{}
	for _, r := range roots {
		if err := s.mark(r, live); err != nil {
			return 0, err // a damaged store loses nothing to collection
		}
	}
	freed, err := s.collectPacks(live)
	if err != nil {
		s.bytes -= freed
		s.charge.give(freed)
		return freed, fmt.Errorf("collecting unused checkpoint objects: %w", err)
	}
	err = filepath.WalkDir(filepath.Join(s.dir, objectsDir), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		sum := filepath.Base(filepath.Dir(p)) + d.Name()
		if live[sum] {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if err := os.Remove(p); err != nil {
			return err
		}
		freed += info.Size()
		return nil
	})
	s.bytes -= freed
	s.charge.give(freed)
	if err != nil {
		return freed, fmt.Errorf("collecting unused checkpoint objects: %w", err)
	}
	return freed, nil
}

// mark adds the objects reachable from the tree root to live.
func (s *Store) mark(root string, live map[string]bool) error {
	if live[root] {
		return nil
	}
	live[root] = true
	entries, err := s.ReadTree(root)
	if err != nil {
		return err
	}
	for _, e := range entries {
		switch e.Kind {
		case KindDir:
			if err := s.mark(e.Hash, live); err != nil {
				return err
			}
		case KindFile:
			live[e.Hash] = true
		}
	}
	return nil
}
