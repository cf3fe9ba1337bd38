//go:build linux

package agent

import (
	"os"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// drainLocked reads the events queued when it begins and records the
// changes, but not those of paths own claims. Events queued while it
// reads are left to the next drain: a command making events as fast as
// they are read (a rename loop) would otherwise keep the watch's lock,
// and the tool change waiting for it, until the command ended.
func (w *watcher) drainLocked(own func(string) bool) {
	if w.fd < 0 {
		return
	}
	d := drain{w: w, walk: map[string]struct{}{}, record: w.recorder(own)}
	queued, err := unix.IoctlGetInt(w.fd, unix.TIOCINQ) // FIONREAD: the bytes of events queued
	if err != nil {
		queued = len(w.buf) // one buffer's worth: the loop reads the rest
	}
	for read := 0; read < queued; {
		n, err := unix.Read(w.fd, w.buf)
		if err != nil || n < unix.SizeofInotifyEvent {
			break
		}
		read += n
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&w.buf[off]))
			nameAt := off + unix.SizeofInotifyEvent
			off = nameAt + int(ev.Len)
			name := strings.TrimRight(string(w.buf[nameAt:min(off, n)]), "\x00")
			d.event(ev.Wd, ev.Mask, ev.Cookie, name)
		}
	}
	d.finish()
	if w.overflow {
		w.overflow = false
		w.addTreeLocked("", nil)
	}
	if !w.pending.empty() || len(w.moved) > 0 {
		w.signal()
	}
}

// recorder records the change of a path, but not of a path own claims,
// nor of a temporary file the tools write through.
func (w *watcher) recorder(own func(string) bool) func(string) {
	return func(p string) {
		if !isToolTemp(p) && (own == nil || !own(p)) {
			w.pending.add(p)
		}
	}
}

// drain is the state of one drainLocked. A directory renamed inside the
// workspace keeps its watches, which follow the inode: its MOVED_FROM and
// MOVED_TO, paired by their cookie, only rename the watches' paths, and
// its files are recorded under the new name when the changes are next
// taken (see watcher.moved). A directory created or moved in is watched,
// and its entries recorded (they may predate the watch), once, when the
// drain has read its events. So a command renaming a tree back and forth
// costs one walk of it a report, not one an event.
type drain struct {
	w      *watcher
	record func(string)
	// from is the directory whose MOVED_FROM waits for its MOVED_TO, which
	// the kernel queues next; fromCookie pairs them.
	from       string
	fromCookie uint32
	moving     bool
	// walk are the directories to watch and read when the drain ends, in
	// the order they came (the first come are watched at a limit).
	walk  map[string]struct{}
	order []string
}

// event handles one event of the watch wd on its entry name.
func (d *drain) event(wd int32, mask, cookie uint32, name string) {
	w := d.w
	if d.moving && !(mask&unix.IN_MOVED_TO != 0 && cookie == d.fromCookie) {
		d.movedOut()
	}
	if mask&unix.IN_Q_OVERFLOW != 0 {
		w.pending.addAll()
		w.overflow = true
		return
	}
	dir, ok := w.byWD[wd]
	if !ok {
		return
	}
	if mask&unix.IN_IGNORED != 0 {
		delete(w.byWD, wd)
		if w.byPath[dir] == wd {
			delete(w.byPath, dir)
		}
		return
	}
	if name == "" {
		return // the directory itself: its parent's watch reports it
	}
	p := joinRel(dir, name)
	switch {
	case mask&unix.IN_ISDIR == 0:
		d.record(p)
	case mask&unix.IN_MOVED_FROM != 0:
		d.from, d.fromCookie, d.moving = p, cookie, true
		d.record(p)
	case mask&unix.IN_DELETE != 0:
		w.dropTreeLocked(p)
		d.record(p)
	case mask&unix.IN_MOVED_TO != 0 && d.moving && w.watched(d.from):
		d.moving = false
		w.moveTreeLocked(d.from, p)
		w.moved[p] = struct{}{}
		d.renameWalks(d.from, p)
	case mask&unix.IN_MOVED_TO != 0 && d.moving:
		// Made in this drain, or left unwatched: watched and read as new.
		d.movedOut()
		d.walkLater(p)
	case mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
		d.walkLater(p)
	}
}

// watched says the directory dir is watched.
func (w *watcher) watched(dir string) bool {
	_, ok := w.byPath[dir]
	return ok
}

// movedOut ends a MOVED_FROM no MOVED_TO followed: the directory left the
// watched tree, and is watched no more.
func (d *drain) movedOut() {
	d.moving = false
	d.w.dropTreeLocked(d.from)
}

// finish watches and reads the directories created or moved in, each
// once: a directory under another to walk is walked with it.
func (d *drain) finish() {
	if d.moving {
		d.movedOut()
	}
	for _, p := range d.order {
		if underAny(p, d.walk) {
			continue
		}
		d.w.addTreeLocked(p, d.record)
	}
}

// walkLater has finish watch and read the directory p.
func (d *drain) walkLater(p string) {
	if _, ok := d.walk[p]; !ok {
		d.walk[p] = struct{}{}
		d.order = append(d.order, p)
	}
}

// flushMovedLocked records, through record, the files under the
// directories renamed since the changes were last taken, and forgets
// them: all of them, or those only claims when it is not nil.
func (w *watcher) flushMovedLocked(record func(string), only func(string) bool) {
	var done []string
	for p := range w.moved {
		if only != nil && !only(p) {
			continue
		}
		if !underAny(p, w.moved) {
			w.walkFilesLocked(p, record)
		}
		done = append(done, p)
	}
	for _, p := range done {
		delete(w.moved, p)
	}
}

// renameWalks renames the directories to walk under from, which a
// rename moved to to, so that finish still finds them.
func (d *drain) renameWalks(from, to string) {
	for i, p := range d.order {
		if p == from || isAncestor(from, p) {
			delete(d.walk, p)
			d.order[i] = to + p[len(from):]
			d.walk[d.order[i]] = struct{}{}
		}
	}
}

// underAny says a directory above p is in dirs.
func underAny(p string, dirs map[string]struct{}) bool {
	for up := parentOf(p); up != ""; up = parentOf(up) {
		if _, ok := dirs[up]; ok {
			return true
		}
	}
	return false
}

// walkFilesLocked passes record every entry under dir that is not a
// directory. Each directory below dir is opened from its parent's
// descriptor, by the name its parent lists and never through a link, so
// the walk costs a few calls a directory, however deep.
func (w *watcher) walkFilesLocked(dir string, record func(string)) {
	if f, err := w.root.Open(dotFor(dir)); err == nil { // else gone already, or swapped
		walkFiles(f, dir, record)
	}
}

// walkFiles passes record every entry under the directory f, named dir,
// that is not a directory, and closes f. It holds one descriptor a level.
func walkFiles(f *os.File, dir string, record func(string)) {
	defer f.Close()
	entries, _ := f.ReadDir(-1)
	for _, e := range entries {
		p := joinRel(dir, e.Name())
		if !e.IsDir() {
			record(p)
			continue
		}
		fd, err := unix.Openat(int(f.Fd()), e.Name(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == nil {
			walkFiles(os.NewFile(uintptr(fd), p), p, record)
		}
	}
}
