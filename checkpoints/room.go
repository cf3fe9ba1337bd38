package checkpoints

import "fmt"

// The cap and the cache disk's free space bound what the store really
// takes as it is written, not what a scan predicted: a command may grow a
// file between the scan that listed it and its read. Every byte of an
// object is reserved before it is written (a large file's chunks as they
// come, a small object when it joins the next pack), and a reservation
// past either bound fails with ErrOverCap. Objects that a build wrote for
// a checkpoint never committed are collected when it aborts, so a refused
// checkpoint leaves nothing behind.

// diskMargin is the free space a checkpoint leaves on the store's disk.
const diskMargin = 64 << 20

// diskLookEvery is how many bytes may be reserved between two looks at the
// cache disk's free space: a statfs per small object would cost more than
// the object, and diskMargin absorbs what passes between two looks.
const diskLookEvery = 1 << 20

// Room checks that n more bytes of objects fit under the cap and on the
// disk, with diskMargin to spare, counting what builds are writing now.
// A store's budget (ChargeTo) is not asked: n is what a checkpoint may
// read, and the budget counts what it adds, known only as it is written.
func (s *Store) Room(n int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.roomLocked(n, true)
}

// roomLocked is Room with s.mu held; lookAtDisk says whether to ask the
// disk for its free space too.
func (s *Store) roomLocked(n int64, lookAtDisk bool) error {
	held := s.bytes + s.reserved
	if s.cap > 0 && held+n > s.cap {
		return fmt.Errorf("%w: it holds %s and this checkpoint needs %s more, past the cap of %s",
			ErrOverCap, FormatBytes(held), FormatBytes(n), FormatBytes(s.cap))
	}
	if !lookAtDisk {
		return nil
	}
	if free, ok := freeBytes(s.dir); ok && free < n+diskMargin {
		return fmt.Errorf("%w: the disk holding %s has %s free, and this checkpoint needs %s more with %s to spare; free space there or move --cache-dir",
			ErrDiskFull, s.dir, FormatBytes(free), FormatBytes(n), FormatBytes(diskMargin))
	}
	return nil
}

// reserve counts n bytes about to be written against the budget, the cap
// and the disk, or says why they do not fit. The caller releases them, or
// turns them into stored bytes, once written.
func (s *Store) reserve(n int64) error {
	if err := s.charge.take(n); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	look := s.sinceDisk+n >= diskLookEvery
	if err := s.roomLocked(n, look); err != nil {
		s.charge.give(n)
		return err
	}
	if look {
		s.sinceDisk = 0
	} else {
		s.sinceDisk += n
	}
	s.reserved += n
	return nil
}

// release gives back n reserved bytes that were not stored.
func (s *Store) release(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reserved -= n
	s.charge.give(n)
}

// stored turns reserved bytes into size bytes of stored objects.
func (s *Store) stored(reserved, size int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reserved -= reserved
	s.bytes += size
	s.charge.give(reserved - size)
}

// Abort ends a build whose checkpoint will not be committed: the objects
// it wrote that nothing else names are collected as soon as no build is
// open. Abort or Done must be called, once.
func (b *Build) Abort() {
	b.end(b.added.Load() > 0)
}

// end releases what the build reserved and did not write, and collects
// what abandoned builds wrote once the last open build ends.
func (b *Build) end(abandon bool) {
	b.mu.Lock()
	pending := int64(b.pendingBytes)
	b.pending, b.pendingBytes = nil, 0
	b.mu.Unlock()
	s := b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reserved -= pending
	s.charge.give(pending)
	s.builds--
	s.abandoned = s.abandoned || abandon
	if s.builds == 0 && s.abandoned {
		s.abandoned = false
		// An error leaves the objects for the next collection: a damaged
		// store loses nothing to it.
		_, _ = s.collect()
	}
}

// diskFull is ErrDiskFull: a store out of room on its disk, which callers
// asking whether a checkpoint fits see as ErrOverCap.
type diskFull struct{}

func (diskFull) Error() string { return "the cache disk is full" }

// Is makes ErrDiskFull an ErrOverCap for errors.Is.
func (diskFull) Is(target error) bool { return target == ErrOverCap }
