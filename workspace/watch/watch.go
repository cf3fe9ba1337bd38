// Package watch follows the changes the processes in a session's
// container make to its workspace: it has the agent of each new channel
// watch /workspace, records the watch's status, and records, in the
// session's touched files, the changes commands report and those the
// agent reports apart (a job's, a background process's).
//
// A Watcher reaches its session only through its Deps, never by
// importing workspace. It takes no lock of its own (its status is one
// atomic pointer); the touched files' record it writes to is a leaf.
package watch

import (
	"context"
	"fmt"
	"log/slog"
	pathpkg "path"
	"sync/atomic"
	"time"

	"github.com/wink-mcp/wink-mcp/wire"
	"github.com/wink-mcp/wink-mcp/workspace/touched"
	"github.com/wink-mcp/wink-mcp/wspath"
)

const (
	// changesWait is how long one OpChanges waits for a change.
	changesWait = 30 * time.Second
	// changesRetry is the pause after an OpChanges that failed.
	changesRetry = time.Second
)

// Report says how completely the session's workspace is watched for the
// changes commands make, and how many changes its snapshot could not
// list.
type Report struct {
	wire.WatchStatus
	// UnlistedChanges counts the changes too many to list even by directory.
	UnlistedChanges int `json:"unlisted_changes"`
}

// Deps is what a Watcher needs of its session.
type Deps struct {
	// Touched is the session's record of the files its tools and
	// commands touched.
	Touched *touched.Snapshot
	// MaxDirs and InotifyShares bound the agent's watch
	// (Config.WatchDirs, Config.InotifyShares).
	MaxDirs, InotifyShares int
	// Log receives a warning when the watch becomes incomplete.
	Log *slog.Logger
	// Session is what logs call the session now.
	Session func() string
	// Life ends when the session does, and with it the following of the
	// changes the agent reports apart.
	Life context.Context
	// Changed tells the change listener that paths changed, with ctx: a
	// command's call, or none for the changes reported apart.
	Changed func(ctx context.Context, paths ...string)
}

// Watcher is a session's watch of its workspace. It is safe for
// concurrent use.
type Watcher struct {
	d Deps
	// status is the latest status of the agent's watch.
	status atomic.Pointer[wire.WatchStatus]
}

// New returns a session's watcher, watching nothing yet.
func New(d Deps) *Watcher { return &Watcher{d: d} }

// Watching says how completely the workspace is watched for the changes
// commands make.
func (w *Watcher) Watching() Report {
	r := Report{UnlistedChanges: w.d.Touched.UnlistedChanges()}
	if st := w.status.Load(); st != nil {
		r.WatchStatus = *st
	} else {
		r.State, r.Reason = wire.WatchOff, "no container yet"
	}
	return r
}

// Start has the agent of a new channel watch the workspace and follows
// the changes it reports until the channel, or the session, ends.
func (w *Watcher) Start(ctx context.Context, client *wire.Client) error {
	var st wire.WatchStatus
	if err := client.Call(ctx, wire.OpWatch, wire.WatchArgs{MaxDirs: w.d.MaxDirs, InotifyShares: w.d.InotifyShares}, &st); err != nil {
		return fmt.Errorf("starting the workspace watch: %w", err)
	}
	w.note(st)
	go w.follow(client)
	return nil
}

// note records the watch's status, and logs when it becomes incomplete.
func (w *Watcher) note(st wire.WatchStatus) {
	old := w.status.Swap(&st)
	if st.State != wire.WatchFull && (old == nil || old.State != st.State) && w.d.MaxDirs > 0 {
		w.d.Log.Warn("the workspace is not watched in full: changes commands make there are reported as directories that may have changed, after each command",
			"session", w.d.Session(), "watch", st.State, "unwatched", st.Unwatched, "reason", st.Reason)
	}
}

// follow records, and tells subscribers of, the changes the agent
// reports outside any command's result: a job's, a background process's,
// the rest of a burst. It ends with the channel or the session.
func (w *Watcher) follow(client *wire.Client) {
	for {
		var res wire.ChangesResult
		err := client.Call(w.d.Life, wire.OpChanges, wire.ChangesArgs{WaitMillis: changesWait.Milliseconds()}, &res)
		if err == nil {
			w.note(res.Watch)
			w.Commanded(context.Background(), res.Changes)
			continue
		}
		select {
		case <-client.Done():
			return
		case <-w.d.Life.Done():
			return
		case <-time.After(changesRetry):
		}
	}
}

// Commanded records changes processes made and tells the change
// listener, with ctx: a command's call, or none for the changes reported
// apart.
func (w *Watcher) Commanded(ctx context.Context, changes []wire.Change) {
	if len(changes) == 0 {
		return
	}
	for i, c := range changes {
		changes[i] = listable(c)
	}
	w.d.Changed(ctx, w.d.Touched.Commanded(changes)...)
}

// listable returns c, or, when its path breaks the path rules (a name no
// tool could use, or a path the agent should never have sent), the change
// folded into the nearest directory above it that keeps them: it is still
// reported, never listed under a misleading name.
func listable(c wire.Change) wire.Change {
	p := c.Path
	for p != "" {
		if wspath.IsClean(p) {
			break
		}
		p = pathpkg.Dir(p)
		if p == "." || p == "/" {
			p = ""
		}
	}
	if p == c.Path {
		return c
	}
	return wire.Change{Path: p, Folded: max(c.Folded, 1), Unwatched: c.Unwatched, Seq: c.Seq}
}
