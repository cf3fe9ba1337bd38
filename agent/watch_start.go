//go:build linux

package agent

import (
	"errors"
	"fmt"
	"maps"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wink-mcp/wink-mcp/wire"
)

// start begins watching at most maxDirs directories; zero watches nothing.
// Once started, it only reports the status.
func (w *watcher) start(maxDirs int) wire.WatchStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return w.statusLocked()
	}
	w.started, w.maxDirs = true, maxDirs
	if maxDirs <= 0 {
		w.leaveUnwatchedLocked("", "watching is turned off (--watch-dirs 0)")
		return w.statusLocked()
	}
	if err := w.openLocked(); err != nil {
		reason := fmt.Sprintf("inotify could not start: %v", err)
		if errors.Is(err, unix.EMFILE) {
			reason += " (the host's fs.inotify.max_user_instances is reached; raise it)"
		}
		w.leaveUnwatchedLocked("", reason+"; it tries again every second")
	}
	go w.retryLoop()
	return w.statusLocked()
}

// openLocked makes the inotify descriptor and watches the workspace.
func (w *watcher) openLocked() error {
	fd, err := w.initInotify()
	if err != nil {
		return err
	}
	w.fd, w.byWD, w.byPath, w.buf = fd, map[int32]string{}, map[string]int32{}, make([]byte, 64<<10)
	w.addTreeLocked("", nil)
	go w.loop(fd)
	return nil
}

// retryInterval is how often a watch that could not start, or left
// directories unwatched, tries again: the host's inotify limits are
// shared by every container of a user, and what another workspace held a
// moment ago may be free now.
const retryInterval = time.Second

// retryLoop tries again every retryInterval until the watcher is closed.
func (w *watcher) retryLoop() {
	tick := time.NewTicker(retryInterval)
	defer tick.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		w.mu.Lock()
		if !w.closed.Load() {
			w.retryLocked()
		}
		w.mu.Unlock()
	}
}

// retryLocked watches what is left unwatched, if there is room now: a
// watch that could not start starts, and the roots left unwatched at a
// limit are watched again. A root watched again is reported once more as
// possibly changed (see lapsed), as its changes until now were not seen.
func (w *watcher) retryLocked() {
	if len(w.unwatched) == 0 {
		return
	}
	old := maps.Clone(w.unwatched)
	if w.fd < 0 {
		clear(w.unwatched) // the whole workspace, which openLocked may leave in part
		if w.openLocked() != nil {
			w.unwatched = old
			return
		}
	} else {
		if len(w.byPath) >= w.maxDirs || !w.roomForWatch() {
			return
		}
		clear(w.unwatched)
		for d := range old {
			w.addTreeLocked(d, nil)
		}
	}
	for d := range old {
		if _, again := w.unwatched[d]; !again {
			w.lapsed[d] = struct{}{}
		}
	}
	if !maps.Equal(old, w.unwatched) {
		w.changed = true
	}
	if len(w.lapsed) > 0 || w.changed {
		w.signal()
	}
}

// roomForWatch says one more watch can be added now: it adds one on the
// container's root directory, never part of the workspace, and removes it.
// At the host's fs.inotify.max_user_watches the kernel refuses it, and
// nothing is worth retrying.
func (w *watcher) roomForWatch() bool {
	wd, err := unix.InotifyAddWatch(w.fd, "/", unix.IN_DELETE_SELF)
	if err != nil {
		return false
	}
	_, _ = unix.InotifyRmWatch(w.fd, uint32(wd))
	return true
}
