package checkpoints

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Small objects, the most of any workspace's, are stored in packs as git
// stores them: one file of many objects, and an index of where each is.
// A file per object would cost a file creation each (350 µs on the test
// machine's disk: 3.5 s for a checkpoint of 10,000 files) and a disk block
// for a tree of 130 bytes.
const (
	packsDir = "packs"
	// packMaxObject is the largest object a pack takes; larger ones are
	// files of their own.
	packMaxObject = 1 << 20
	// packFlushBytes is how much a Build holds in memory before it writes a pack.
	packFlushBytes = 32 << 20
	// idxRecord is the size of one index record: hash, offset, length.
	idxRecord = 32 + 8 + 8
)

// packLoc is where a packed object is.
type packLoc struct {
	pack        string // the pack's name, without suffix
	off, length int64
}

// packPath is the file of the pack name with this suffix (.pack or .idx).
func (s *Store) packPath(name, suffix string) string {
	return filepath.Join(s.dir, packsDir, name+suffix)
}

// loadPacks reads every pack's index into memory and removes what a killed
// writer left: a pack is there once its index is, renamed in after it.
func (s *Store) loadPacks() error {
	entries, err := os.ReadDir(filepath.Join(s.dir, packsDir))
	if err != nil {
		return fmt.Errorf("reading the checkpoint store: %w", err)
	}
	names := map[string]map[string]bool{}
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		base := strings.TrimSuffix(e.Name(), ext)
		if names[base] == nil {
			names[base] = map[string]bool{}
		}
		names[base][ext] = true
	}
	for name, exts := range names {
		if !exts[".pack"] || !exts[".idx"] {
			for ext := range exts {
				if err := os.Remove(s.packPath(name, ext)); err != nil {
					return fmt.Errorf("removing an unfinished pack: %w", err)
				}
			}
			continue
		}
		if err := s.loadPack(name); err != nil {
			return err
		}
	}
	return nil
}

// loadPack reads one pack's index.
func (s *Store) loadPack(name string) error {
	info, err := os.Stat(s.packPath(name, ".pack"))
	if err != nil {
		return err
	}
	data, err := os.ReadFile(s.packPath(name, ".idx"))
	if err != nil {
		return err
	}
	if len(data)%idxRecord != 0 {
		return fmt.Errorf("%w: the index of pack %s is cut", ErrCorrupt, name)
	}
	for rec := data; len(rec) > 0; rec = rec[idxRecord:] {
		loc := packLoc{pack: name, off: int64(binary.BigEndian.Uint64(rec[32:40])), length: int64(binary.BigEndian.Uint64(rec[40:48]))}
		if loc.off < 0 || loc.length < 0 || loc.off+loc.length > info.Size() {
			return fmt.Errorf("%w: the index of pack %s points past its end", ErrCorrupt, name)
		}
		s.packs[hex.EncodeToString(rec[:32])] = loc
	}
	s.packSizes[name] = info.Size()
	return nil
}

// writePack stores objects as one pack and returns its size. The pack is
// written, then its index; both are renamed in only once whole.
func (s *Store) writePack(objects map[string][]byte) (int64, error) {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	name := hex.EncodeToString(rnd[:])
	pack, err := os.CreateTemp(filepath.Join(s.dir, tmpDir), "pack-*")
	if err != nil {
		return 0, fmt.Errorf("writing to the checkpoint store: %w", err)
	}
	defer os.Remove(pack.Name())
	w := bufio.NewWriterSize(pack, 1<<20)
	idx := make([]byte, 0, len(objects)*idxRecord)
	locs := make(map[string]packLoc, len(objects))
	var off int64
	for sum, data := range objects {
		if _, err := w.Write(data); err != nil {
			pack.Close()
			return 0, fmt.Errorf("writing to the checkpoint store: %w", err)
		}
		raw, _ := hex.DecodeString(sum)
		idx = append(idx, raw...)
		idx = binary.BigEndian.AppendUint64(idx, uint64(off))
		idx = binary.BigEndian.AppendUint64(idx, uint64(len(data)))
		locs[sum] = packLoc{pack: name, off: off, length: int64(len(data))}
		off += int64(len(data))
	}
	err = w.Flush()
	if cerr := pack.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(pack.Name(), s.packPath(name, ".pack"))
	}
	if err == nil {
		err = s.writeFile(filepath.Join(packsDir, name+".idx"), idx, false)
	}
	if err != nil {
		os.Remove(s.packPath(name, ".pack"))
		return 0, fmt.Errorf("writing to the checkpoint store: %w", err)
	}
	s.packMu.Lock()
	for sum, loc := range locs {
		s.packs[sum] = loc
	}
	s.packSizes[name] = off
	s.packMu.Unlock()
	return off, nil
}

// openPacked opens a packed object, or reports that it is not packed.
func (s *Store) openPacked(sum string) (io.ReadCloser, bool, error) {
	s.packMu.RLock()
	loc, ok := s.packs[sum]
	s.packMu.RUnlock()
	if !ok {
		return nil, false, nil
	}
	f, err := os.Open(s.packPath(loc.pack, ".pack"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, true, fmt.Errorf("%w: the pack of object %s is missing", ErrCorrupt, sum)
	}
	if err != nil {
		return nil, true, err
	}
	return struct {
		io.Reader
		io.Closer
	}{io.NewSectionReader(f, loc.off, loc.length), f}, true, nil
}

// collectPacks deletes the packs that hold no live object and rewrites
// those that hold more dead bytes than live ones. It returns the bytes
// freed.
func (s *Store) collectPacks(live map[string]bool) (int64, error) {
	s.packMu.RLock()
	liveBytes := map[string]int64{}
	for sum, loc := range s.packs {
		if live[sum] {
			liveBytes[loc.pack] += loc.length
		}
	}
	sizes := make(map[string]int64, len(s.packSizes))
	for name, size := range s.packSizes {
		sizes[name] = size
	}
	s.packMu.RUnlock()
	var freed int64
	for name, size := range sizes {
		if liveBytes[name]*2 >= size {
			continue
		}
		if liveBytes[name] > 0 {
			kept, err := s.repack(name, live)
			if err != nil {
				return freed, err
			}
			freed -= kept
		}
		s.packMu.Lock()
		for sum, loc := range s.packs {
			if loc.pack == name { // the live ones now point at the new pack
				delete(s.packs, sum)
			}
		}
		delete(s.packSizes, name)
		s.packMu.Unlock()
		if err := os.Remove(s.packPath(name, ".idx")); err != nil {
			return freed, err
		}
		if err := os.Remove(s.packPath(name, ".pack")); err != nil {
			return freed, err
		}
		freed += size
	}
	return freed, nil
}

// repack writes the live objects of the pack name to a new pack and
// returns the new pack's size; the caller removes the old one.
func (s *Store) repack(name string, live map[string]bool) (int64, error) {
	s.packMu.RLock()
	var sums []string
	for sum, loc := range s.packs {
		if loc.pack == name && live[sum] {
			sums = append(sums, sum)
		}
	}
	s.packMu.RUnlock()
	objects := make(map[string][]byte, len(sums))
	for _, sum := range sums {
		r, _, err := s.openPacked(sum)
		if err != nil {
			return 0, err
		}
		data, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			return 0, err
		}
		objects[sum] = data
	}
	return s.writePack(objects)
}
