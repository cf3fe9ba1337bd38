package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/wink-mcp/wink-mcp/workspace"
	"github.com/wink-mcp/wink-mcp/workspace/mounts"
)

// exportCandidates finds what `wink-mcp export` may export: the kept
// workspace named, else the sessions whose hash (or directory) starts with
// session, and, without a session, the kept workspaces with mounted
// folders. code is the exit code when it has already said why there is
// nothing, else -1. The caller calls release when done.
func exportCandidates(cache, session, kept string, stderr io.Writer) (found []workspace.SessionRecord, release func(), code int) {
	if kept != "" {
		rec, release, err := workspace.OpenKept(cache, kept)
		if err != nil {
			fmt.Fprintf(stderr, "wink-mcp export: %v (wink-mcp workspaces lists them)\n", err)
			return nil, func() {}, 1
		}
		if rec.Err == nil && len(rec.Mounts) == 0 {
			release()
			fmt.Fprintf(stderr, "wink-mcp export: kept workspace %s mounts no host folder, so there is nothing to export; its files are in %s\n", kept, rec.Dir)
			return nil, func() {}, 1
		}
		return []workspace.SessionRecord{rec}, release, -1
	}
	sessions, releaseSessions, err := workspace.FindSessions(cache)
	if err != nil {
		fmt.Fprintf(stderr, "wink-mcp export: %v\n", err)
		return nil, func() {}, 1
	}
	for _, s := range sessions {
		if strings.HasPrefix(s.Hash, session) || strings.HasPrefix(filepath.Base(s.Dir), session) {
			found = append(found, s)
		}
	}
	if session != "" {
		return found, releaseSessions, -1
	}
	keptFound, releaseKept, err := workspace.FindKept(cache)
	if err != nil {
		fmt.Fprintf(stderr, "wink-mcp export: listing the kept workspaces: %v\n", err)
	}
	return append(found, keptFound...), func() { releaseKept(); releaseSessions() }, -1
}

// chooseExport picks the one candidate to export: the only one, or the
// only one of several that changed something. Otherwise it says why there
// is none, or lists them with the command that exports each, and returns
// the exit code (else -1).
func chooseExport(ctx context.Context, candidates []workspace.SessionRecord, session, cache string, stderr io.Writer) (workspace.SessionRecord, int) {
	switch {
	case len(candidates) == 1:
		return candidates[0], -1
	case len(candidates) == 0 && session != "":
		fmt.Fprintf(stderr, "wink-mcp export: no session with mounted folders under %s starts with %s; run wink-mcp export%s without --session to list them\n", cache, session, cacheFlag(cache))
		return workspace.SessionRecord{}, 1
	case len(candidates) == 0:
		fmt.Fprintf(stderr, "wink-mcp export: no session or kept workspace with mounted folders under %s; a session's files are there while its server runs, "+
			"and after it ends with --keep-session-dirs or until its export on exit is written\n", cache)
		return workspace.SessionRecord{}, 1
	}
	changed := make([]int, len(candidates)) // -1: unknown
	var withChanges []int
	unknown := 0
	for i, c := range candidates {
		changed[i] = -1
		if c.Err == nil {
			if n, err := mounts.CountChanges(ctx, c.Dir, c.Mounts); err == nil {
				changed[i] = n
			}
		}
		switch {
		case changed[i] < 0:
			unknown++
		case changed[i] > 0:
			withChanges = append(withChanges, i)
		}
	}
	what := countWhat(candidates)
	switch {
	case session != "":
		fmt.Fprintf(stderr, "wink-mcp export: %s under %s start with %s; choose one with the flag on its line:\n", what, cache, session)
	case len(withChanges) == 1 && unknown == 0:
		c := candidates[withChanges[0]]
		fmt.Fprintf(stderr, "wink-mcp export: %s mount host folders under %s, and only %s changed them: exporting it\n", what, cache, describeWhat(c))
		return c, -1
	case len(withChanges) == 0 && unknown == 0:
		fmt.Fprintf(stderr, "wink-mcp export: %s mount host folders under %s, and none changed them: nothing to export\n", what, cache)
		printCandidates(stderr, candidates, changed, cacheFlag(cache))
		return workspace.SessionRecord{}, 0
	default:
		fmt.Fprintf(stderr, "wink-mcp export: %s mount host folders under %s; choose one with the flag on its line:\n", what, cache)
	}
	printCandidates(stderr, candidates, changed, cacheFlag(cache))
	return workspace.SessionRecord{}, 2
}

// countWhat counts candidates by kind: "2 sessions and 1 kept workspace".
func countWhat(candidates []workspace.SessionRecord) string {
	sessions, kept := 0, 0
	for _, c := range candidates {
		if c.Workspace != "" {
			kept++
		} else {
			sessions++
		}
	}
	var parts []string
	if sessions > 0 {
		parts = append(parts, plural(sessions, "session", "sessions"))
	}
	if kept > 0 {
		parts = append(parts, plural(kept, "kept workspace", "kept workspaces"))
	}
	return strings.Join(parts, " and ")
}

// plural counts n things.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// printCandidates lists candidates, each with the command that exports it.
func printCandidates(w io.Writer, candidates []workspace.SessionRecord, changed []int, cacheArg string) {
	for i, c := range candidates {
		pick := "--session " + c.Hash
		if c.Workspace != "" {
			pick = "--workspace " + c.Workspace
		}
		var n string
		switch {
		case changed[i] < 0:
			n = "changes unknown"
		case changed[i] == 0:
			n = "no changes"
		default:
			n = plural(changed[i], "changed path", "changed paths")
		}
		fmt.Fprintf(w, "  wink-mcp export%s %-28s  %s, %s: %s\n", cacheArg, pick, describeState(c), n, describeMounts(c))
	}
}

// describeWhat names a candidate in a sentence.
func describeWhat(c workspace.SessionRecord) string {
	if c.Workspace != "" {
		return "kept workspace " + c.Workspace
	}
	return "session " + c.Hash
}

// describeState says whether a candidate is in use, and since when.
func describeState(c workspace.SessionRecord) string {
	when := c.Modified.Local().Format("2006-01-02 15:04")
	switch {
	case c.Workspace != "" && c.Alive:
		return "kept workspace, open in a session, last opened " + when
	case c.Workspace != "":
		return "kept workspace, last used " + when
	case c.Alive:
		return "running, started " + when
	}
	return "ended, started " + when
}

// cacheFlag is the --cache-dir flag a printed command needs to find cache.
func cacheFlag(cache string) string {
	if cache == workspace.DefaultConfig().CacheDir {
		return ""
	}
	return " --cache-dir " + shellQuote(cache)
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:=@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
