//go:build linux

package agent

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wink-mcp/wink-mcp/wire"
)

// watchMask is what a watched directory reports: its entries created,
// written, changed in mode or owner, moved and removed. IN_MODIFY comes
// with each write, but the kernel merges a run of identical events.
const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_ATTRIB |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK

// watcher follows the changes any process makes in the workspace with
// inotify, one watch per directory, and keeps them coalesced in a bounded
// changeSet until they are reported (see Agent.takeChanges). Reading
// events and recording them happen under mu, so a tool change can drain
// the kernel's queue and drop its own events (see own) with no reader
// holding some back.
type watcher struct {
	root *os.Root

	mu      sync.Mutex
	fd      int // the inotify descriptor, non-blocking; -1 when nothing is watched
	started bool
	maxDirs int
	byWD    map[int32]string // watch → directory, "" for the workspace
	byPath  map[string]int32
	pending changeSet
	// unwatched are the roots of the subtrees not watched ("" for all),
	// and reason says why; suspect says they may have changed since they
	// were last reported so: a command ended, or one of them was just made.
	unwatched map[string]struct{}
	reason    string
	suspect   bool
	// lapsed are roots that were unwatched and are watched again (see
	// retryLocked): what happened under them before is unknown, so the
	// next report names them once more as possibly changed.
	lapsed map[string]struct{}
	// moved are the directories renamed inside the workspace since the
	// changes were last taken: their watches followed them, and their
	// files are recorded under the new names when the changes are taken.
	moved map[string]struct{}
	// changed says the status changed since it was last reported.
	changed  bool
	overflow bool // the kernel's queue overflowed: every directory is watched again
	buf      []byte

	// ready receives a token when something becomes reportable.
	ready  chan struct{}
	closed atomic.Bool
	// stop ends the retry loop (see retryLoop).
	stop chan struct{}

	// initInotify makes the inotify descriptor; tests make it fail.
	initInotify func() (int, error)
}

func newWatcher(root *os.Root) *watcher {
	return &watcher{root: root, fd: -1, unwatched: map[string]struct{}{}, lapsed: map[string]struct{}{}, moved: map[string]struct{}{},
		ready: make(chan struct{}, 1), stop: make(chan struct{}),
		initInotify: func() (int, error) { return unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC) }}
}

// close stops the watch.
func (w *watcher) close() {
	if !w.closed.Swap(true) {
		close(w.stop)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd >= 0 {
		unix.Close(w.fd)
		w.fd = -1
	}
}

// readPause is how long the loop lets events gather in the kernel's queue
// once one has come: reading them in batches, at most 50 times a second,
// instead of one wake-up per event, keeps the watch's share of the
// container's CPU small while a command writes thousands of files.
const readPause = 20 * time.Millisecond

// loop reads events as they come until the watcher is closed.
func (w *watcher) loop(fd int) {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for !w.closed.Load() {
		n, err := unix.Poll(fds, 1000)
		if err != nil && !errors.Is(err, unix.EINTR) || n <= 0 {
			continue
		}
		time.Sleep(readPause)
		w.mu.Lock()
		w.drainLocked(nil)
		w.mu.Unlock()
	}
}

// addTreeLocked watches dir and the directories under it, passing each
// other entry found to record when it is not nil. A directory that cannot
// be watched is left unwatched; when record is given, something is making
// it now, and the unwatched directories are reported as possibly changed
// with the next report, as after a command.
func (w *watcher) addTreeLocked(dir string, record func(string)) {
	leave := func(d, reason string) {
		w.leaveUnwatchedLocked(d, reason)
		if record != nil {
			w.suspectLocked()
		}
	}
	if !w.roomFor(dir, leave) {
		return
	}
	if f, err := w.root.Open(dotFor(dir)); err == nil { // else gone already, or swapped for something else
		w.addOpenTreeLocked(f, dir, record, leave)
	}
}

// roomFor says one more directory, d, may be watched, and leaves it
// unwatched when --watch-dirs are watched already.
func (w *watcher) roomFor(d string, leave func(d, reason string)) bool {
	if _, ok := w.byPath[d]; !ok && len(w.byPath) >= w.maxDirs {
		leave(d, fmt.Sprintf("%d directories are watched, the most --watch-dirs allows", w.maxDirs))
		return false
	}
	return true
}

// addOpenTreeLocked watches the directory f, named dir, and those under
// it (see addTreeLocked), and closes f. Each directory below is opened
// from its parent's descriptor, by the name its parent lists and never
// through a link: a directory renamed while the walk runs is still
// watched whole, and its events then rename the watches' paths.
func (w *watcher) addOpenTreeLocked(f *os.File, dir string, record func(string), leave func(d, reason string)) {
	defer f.Close()
	// The descriptor names the very directory opened inside the
	// workspace: no link swapped in on the way can redirect the watch.
	wd, err := unix.InotifyAddWatch(w.fd, "/proc/self/fd/"+strconv.Itoa(int(f.Fd())), watchMask)
	if err != nil {
		reason := fmt.Sprintf("watching %q failed: %v", shownRel(dir), err)
		if errors.Is(err, unix.ENOSPC) {
			reason = "the host's inotify watch limit (fs.inotify.max_user_watches) is reached; it tries again every second"
		}
		leave(dir, reason)
		return
	}
	if old, ok := w.byWD[int32(wd)]; ok && old != dir && w.byPath[old] == int32(wd) {
		delete(w.byPath, old)
	}
	w.byWD[int32(wd)], w.byPath[dir] = dir, int32(wd)
	entries, _ := f.ReadDir(-1)
	for _, e := range entries {
		p := joinRel(dir, e.Name())
		if !e.IsDir() {
			if record != nil {
				record(p)
			}
			continue
		}
		if !w.roomFor(p, leave) {
			continue
		}
		fd, err := unix.Openat(int(f.Fd()), e.Name(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == nil { // else gone already, or swapped for something else
			w.addOpenTreeLocked(os.NewFile(uintptr(fd), p), p, record, leave)
		}
	}
}

// dropTreeLocked stops watching dir and the directories under it, which
// were removed or moved away.
func (w *watcher) dropTreeLocked(dir string) {
	for p, wd := range w.byPath {
		if p == dir || isAncestor(dir, p) {
			_, _ = unix.InotifyRmWatch(w.fd, uint32(wd))
			delete(w.byPath, p)
			delete(w.byWD, wd)
		}
	}
	if _, ok := w.unwatched[dir]; ok {
		delete(w.unwatched, dir)
		w.changed = true
	}
	for p := range w.moved {
		if p == dir || isAncestor(dir, p) {
			delete(w.moved, p)
		}
	}
}

// moveTreeLocked renames the watches of the directory from and of those
// under it, which a rename moved to to in the workspace: a watch follows
// its directory. What was at to before is watched no more.
func (w *watcher) moveTreeLocked(from, to string) {
	if w.watched(to) {
		w.dropTreeLocked(to)
	} else if _, ok := w.unwatched[to]; ok {
		delete(w.unwatched, to)
		w.changed = true
	}
	moved := map[string]int32{}
	for p, wd := range w.byPath {
		if p == from || isAncestor(from, p) {
			moved[to+p[len(from):]] = wd
			delete(w.byPath, p)
		}
	}
	for p, wd := range moved {
		w.byPath[p], w.byWD[wd] = wd, p
	}
	if renameUnder(w.unwatched, from, to) {
		w.changed = true // the same directories, now under other names
	}
	renameUnder(w.moved, from, to)
}

// renameUnder renames from, and the paths under it, to to in set, and
// says whether any was.
func renameUnder(set map[string]struct{}, from, to string) bool {
	var under []string
	for p := range set {
		if p == from || isAncestor(from, p) {
			under = append(under, p)
		}
	}
	for _, p := range under {
		delete(set, p)
		set[to+p[len(from):]] = struct{}{}
	}
	return len(under) > 0
}

// leaveUnwatchedLocked records that the subtree at dir is not watched.
func (w *watcher) leaveUnwatchedLocked(dir, reason string) {
	if len(w.unwatched) >= wire.MaxUnwatched {
		clear(w.unwatched)
		dir = ""
	}
	if _, ok := w.unwatched[dir]; !ok {
		w.unwatched[dir] = struct{}{}
		w.reason, w.changed = reason, true
		w.signal()
	}
}

// suspectLocked says the unwatched directories may have changed since
// they were last reported so, and wakes a report waiting for changes: with
// nothing watched, or a directory unwatched, nothing else would.
func (w *watcher) suspectLocked() {
	w.suspect = true
	w.signal()
}

// signal says something became reportable, without blocking.
func (w *watcher) signal() {
	select {
	case w.ready <- struct{}{}:
	default:
	}
}

// reportable says changes wait to be reported.
func (w *watcher) reportable() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.pending.empty() || len(w.moved) > 0 || w.changed || w.suspect && len(w.unwatched) > 0 || len(w.lapsed) > 0
}

// commandEnded says a command ended: what is not watched may have changed,
// and a report waiting for changes hears it at once. Whether anything is
// unwatched is asked by the report that follows, after it has read the
// command's events: a directory the command made may be the one left
// unwatched.
func (w *watcher) commandEnded() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		w.suspectLocked()
	}
}

// own drains the events and, when made, forgets the changes of paths,
// which the caller, a tool change holding the mutation lock, has just made
// and reports itself: the paths, the directories made for them and what
// was under them. (The temporary files tools write through are never
// reported, whether the change was made or not.)
func (w *watcher) own(made bool, paths ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !made {
		w.drainLocked(nil)
		return
	}
	claims := func(q string) bool {
		for _, p := range paths {
			if q == p || isAncestor(q, p) || isAncestor(p, q) {
				return true
			}
		}
		return false
	}
	w.drainLocked(claims)
	w.flushMovedLocked(w.recorder(claims), claims) // the rest wait for the report
	for _, p := range paths {
		w.pending.forget(p)
	}
}

// discard drains the events and forgets every pending change: the caller,
// a restore holding the mutation lock with no command running, reports
// the whole workspace itself.
func (w *watcher) discard() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.drainLocked(func(string) bool { return true })
	clear(w.moved)
	w.pending = changeSet{}
}

// isToolTemp says p is the name of a temporary file replaceFile writes
// through, which no report names.
func isToolTemp(p string) bool {
	base := p[strings.LastIndexByte(p, '/')+1:]
	return strings.HasPrefix(base, ".wink-") && strings.HasSuffix(base, ".tmp")
}

// take drains the events and returns at most n pending changes, each as
// it is now and numbered seq, and whether more are pending.
func (w *watcher) take(n int, seq int64) ([]wire.Change, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.started {
		return nil, false
	}
	w.drainLocked(nil)
	w.flushMovedLocked(w.recorder(nil), nil)
	var out []wire.Change
	if w.suspect {
		for d := range w.unwatched {
			out = append(out, wire.Change{Path: d, Unwatched: true, Seq: seq})
		}
		w.suspect = false
	}
	for d := range w.lapsed {
		if !slices.ContainsFunc(out, func(c wire.Change) bool { return c.Path == d }) {
			out = append(out, wire.Change{Path: d, Unwatched: true, Seq: seq})
		}
	}
	clear(w.lapsed)
	for _, e := range w.pending.take(n) {
		c := wire.Change{Path: e.path, Folded: e.folded, Seq: seq}
		fi, err := w.root.Lstat(dotFor(e.path))
		switch {
		case errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOTDIR):
			c.Removed = true
		case err != nil:
		case fi.IsDir():
			c.Dir = true
		default:
			c.SizeBytes = fi.Size()
		}
		out = append(out, c)
	}
	return out, !w.pending.empty()
}

// status says how completely the workspace is watched, which is then
// reported: a command's result carries changes only, so a status that
// changed as it ran waits for this.
func (w *watcher) status() wire.WatchStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.changed = false
	return w.statusLocked()
}

// statusLocked says how completely the workspace is watched.
func (w *watcher) statusLocked() wire.WatchStatus {
	st := wire.WatchStatus{State: wire.WatchFull, Dirs: len(w.byPath)}
	if len(w.unwatched) > 0 {
		st.State, st.Unwatched, st.Reason = wire.WatchPartial, slices.Sorted(maps.Keys(w.unwatched)), w.reason
	}
	if w.fd < 0 {
		st.State = wire.WatchOff
	}
	return st
}

// dotFor is the name os.Root opens for a workspace path.
func dotFor(p string) string {
	if p == "" {
		return "."
	}
	return p
}
