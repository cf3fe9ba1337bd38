package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"syscall"

	"github.com/wink-mcp/wink-mcp/display"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// runExport writes a session's changes to its mounted folders as git
// patches: to stdout when it has one folder that can change, else into
// --out. It exits 2 on bad flags or when the session is ambiguous.
func runExport(args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("wink-mcp export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: wink-mcp export [--session HASH] [--out DIR] [--cache-dir DIR] [--export-ignored]\n\n"+
			"Writes what a session changed in its mounted host folders as patches that `git apply` accepts in a clean copy\n"+
			"of each folder. Sessions are found under the cache directory while their server runs, or afterwards when it\n"+
			"ran with --keep-session-dirs or its export on exit could not finish; a handed-over workspace whose export waits goes by its\n"+
			"name (handoff-...). With one changeable folder and no --out, the patch goes to stdout.\n\n")
		fs.PrintDefaults()
	}
	cache := workspace.DefaultConfig().CacheDir
	if v, ok := lookup("WINK_CACHE"); ok && v != "" {
		cache = v
	}
	fs.StringVar(&cache, "cache-dir", cache, "the cache directory the server used [WINK_CACHE]")
	session := fs.String("session", "", "the session's hash, or its start, or a handed-over workspace's name (see the list without it, or the server's logs)")
	out := fs.String("out", "", "write one <workspace path>.patch per folder here")
	ignored := fs.Bool("export-ignored", false, "put in the patches the new files a folder's .gitignore ignores, whatever the server did")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "wink-mcp export: unexpected argument %q (see -h)\n", fs.Arg(0))
		return 2
	}
	sessions, release, err := workspace.FindSessions(cache)
	if err != nil {
		fmt.Fprintf(stderr, "wink-mcp export: %v\n", err)
		return 1
	}
	defer release()
	var matches []workspace.SessionRecord
	for _, s := range sessions {
		if strings.HasPrefix(s.Hash, *session) {
			matches = append(matches, s)
		}
	}
	switch {
	case len(matches) == 0:
		fmt.Fprintf(stderr, "wink-mcp export: no session with mounted folders under %s%s; a session's files are kept after it ends with --keep-session-dirs, or until its export on exit is written\n",
			cache, map[bool]string{true: " matches " + *session, false: ""}[*session != ""])
		return 1
	case len(matches) > 1:
		fmt.Fprintf(stderr, "wink-mcp export: %d sessions; choose one with --session:\n", len(matches))
		for _, s := range matches {
			fmt.Fprintf(stderr, "  %s  %s  %s\n", s.Hash, s.Modified.Format("2006-01-02 15:04"), describeMounts(s))
		}
		return 2
	}
	s := matches[0]
	if s.Err != nil {
		fmt.Fprintf(stderr, "wink-mcp export: session %s cannot be read: %v\n", s.Hash, s.Err)
		return 1
	}
	for i := range s.Mounts {
		s.Mounts[i].ExportIgnored = s.Mounts[i].ExportIgnored || *ignored
	}
	// Ctrl-C stops a long export cleanly: no partial patch file is left.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if *out != "" {
		written, err := workspace.ExportChanges(ctx, s.Dir, s.Mounts, *out)
		patches := 0
		for _, p := range written {
			if p.Path != "" {
				fmt.Fprintln(stdout, p.Path)
				patches++
			}
			printLeftOut(stderr, p.LeftOut)
		}
		if err != nil {
			fmt.Fprintf(stderr, "wink-mcp export: %v\n", err)
			return 1
		}
		if patches == 0 {
			fmt.Fprintln(stderr, "wink-mcp export: the session changed none of its mounted folders")
		}
		return 0
	}
	var changeable []workspace.MountInfo
	for _, m := range s.Mounts {
		if m.Mode != workspace.MountReadOnly {
			changeable = append(changeable, m)
		}
	}
	if len(changeable) != 1 {
		fmt.Fprintf(stderr, "wink-mcp export: session %s has %d folders that can change (%s); write their patches with --out DIR\n", s.Hash, len(changeable), describeMounts(s))
		return 2
	}
	ex, err := workspace.ExportMount(ctx, s.Dir, changeable[0], stdout)
	if err != nil {
		fmt.Fprintf(stderr, "wink-mcp export: %v\n", err)
		return 1
	}
	printLeftOut(stderr, ex.LeftOut)
	fmt.Fprintf(stderr, "wink-mcp export: %d changed paths in %s\n", ex.Changed, changeable[0].HostPath)
	return 0
}

// printLeftOut names the changes a patch does not hold.
func printLeftOut(stderr io.Writer, left []string) {
	for _, line := range left {
		fmt.Fprintf(stderr, "wink-mcp export: not in the patch: %s\n", display.Text(line))
	}
}

func describeMounts(s workspace.SessionRecord) string {
	if s.Err != nil {
		return "ended, cannot be read: " + s.Err.Error()
	}
	var parts []string
	for _, m := range s.Mounts {
		parts = append(parts, fmt.Sprintf("%s at /workspace/%s (%s)", m.HostPath, m.Path, m.Mode))
	}
	state := "ended"
	if s.Alive {
		state = "running"
	}
	return state + ": " + strings.Join(parts, ", ")
}
