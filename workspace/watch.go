package workspace

import (
	"context"
	"fmt"
	pathpkg "path"
	"time"

	"github.com/wink-mcp/wink-mcp/wire"
	"github.com/wink-mcp/wink-mcp/wspath"
)

const (
	// changesWait is how long one OpChanges waits for a change.
	changesWait = 30 * time.Second
	// changesRetry is the pause after an OpChanges that failed.
	changesRetry = time.Second
)

// WatchReport says how completely the session's workspace is watched for
// the changes commands make, and how many changes its snapshot could not
// list.
type WatchReport struct {
	wire.WatchStatus
	// UnlistedChanges counts the changes too many to list even by directory.
	UnlistedChanges int `json:"unlisted_changes"`
}

// Watching says how completely the workspace is watched for the changes
// commands make.
func (s *Session) Watching() WatchReport {
	r := WatchReport{UnlistedChanges: s.touched.UnlistedChanges()}
	if st := s.watchStatus.Load(); st != nil {
		r.WatchStatus = *st
	} else {
		r.State, r.Reason = wire.WatchOff, "no container yet"
	}
	return r
}

// startWatchLocked has the agent of a new channel watch the workspace and
// follows the changes it reports until the channel ends.
func (s *Session) startWatchLocked(ctx context.Context, client *wire.Client) error {
	var st wire.WatchStatus
	if err := client.Call(ctx, wire.OpWatch, wire.WatchArgs{MaxDirs: s.m.cfg.WatchDirs, InotifyShares: s.m.cfg.InotifyShares}, &st); err != nil {
		return fmt.Errorf("starting the workspace watch: %w", err)
	}
	s.noteWatch(st)
	go s.followChanges(client)
	return nil
}

// noteWatch records the watch's status, and logs when it becomes incomplete.
func (s *Session) noteWatch(st wire.WatchStatus) {
	old := s.watchStatus.Swap(&st)
	if st.State != wire.WatchFull && (old == nil || old.State != st.State) && s.m.cfg.WatchDirs > 0 {
		s.m.log.Warn("the workspace is not watched in full: changes commands make there are reported as directories that may have changed, after each command",
			"session", s.hash(), "watch", st.State, "unwatched", st.Unwatched, "reason", st.Reason)
	}
}

// followChanges records, and tells subscribers of, the changes the agent
// reports outside any command's result: a job's, a background process's,
// the rest of a burst. It ends with the channel or the session.
func (s *Session) followChanges(client *wire.Client) {
	for {
		var res wire.ChangesResult
		err := client.Call(s.life, wire.OpChanges, wire.ChangesArgs{WaitMillis: changesWait.Milliseconds()}, &res)
		if err == nil {
			s.noteWatch(res.Watch)
			s.commanded(context.Background(), res.Changes)
			continue
		}
		select {
		case <-client.Done():
			return
		case <-s.life.Done():
			return
		case <-time.After(changesRetry):
		}
	}
}

// commanded records changes processes made and tells the change listener,
// with ctx: a command's call, or none for the changes reported apart.
func (s *Session) commanded(ctx context.Context, changes []wire.Change) {
	if len(changes) == 0 {
		return
	}
	for i, c := range changes {
		changes[i] = listable(c)
	}
	paths := s.touched.Commanded(changes)
	if id := s.id(); id != "" {
		s.m.changed(ctx, id, paths...)
	}
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
