package workspace

import (
	"context"

	"github.com/wink-mcp/wink-mcp/workspace/watch"
)

// WatchReport says how completely the session's workspace is watched for
// the changes commands make, and how many changes its snapshot could not
// list (watch.Report).
type WatchReport = watch.Report

// newWatcher returns the session's watch of its workspace (package
// watch), which tells the change listener of what changed only while the
// workspace serves an MCP session.
func (s *Session) newWatcher() *watch.Watcher {
	return watch.New(watch.Deps{
		Touched: &s.touched, MaxDirs: s.m.cfg.WatchDirs, InotifyShares: s.m.cfg.InotifyShares,
		Log: s.m.log, Session: s.who.hash, Life: s.life,
		Changed: func(ctx context.Context, paths ...string) {
			if id := s.who.id(); id != "" {
				s.m.changed(ctx, id, paths...)
			}
		},
	})
}
