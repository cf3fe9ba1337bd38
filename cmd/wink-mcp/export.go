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
	"github.com/wink-mcp/wink-mcp/workspace/mounts"
)

// runExport writes the changes of a session, or of a kept workspace, to
// its mounted folders as git patches: to stdout when it has one folder
// that can change, else into --out. It exits 2 on bad flags or when the
// session is ambiguous, and then lists the sessions with the flag that
// picks each.
func runExport(args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("wink-mcp export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: wink-mcp export [--session HASH | --workspace NAME] [--out DIR] [--cache-dir DIR] [--export-ignored]\n\n"+
			"Writes what a session changed in its mounted host folders as patches that `git apply` accepts in a clean copy\n"+
			"of each folder. Sessions are found under the cache directory while their server runs, or afterwards when it\n"+
			"ran with --keep-session-dirs or its export on exit could not finish; kept workspaces (--workspace) always; a\n"+
			"handed-over workspace whose export waits goes by its name (--session handoff-...).\n"+
			"Without --session or --workspace it exports the only one that changed something, or lists them with the\n"+
			"flag that picks each. With one changeable folder and no --out, the patch goes to stdout.\n\n")
		fs.PrintDefaults()
	}
	cache := workspace.DefaultConfig().CacheDir
	if v, ok := lookup("WINK_CACHE"); ok && v != "" {
		cache = v
	}
	fs.StringVar(&cache, "cache-dir", cache, "the cache directory the server used [WINK_CACHE]")
	session := fs.String("session", "", "the session's hash, or its start, or a handed-over workspace's name (see the list without it, or the server's logs)")
	kept := fs.String("workspace", "", "the kept workspace's name (see wink-mcp workspaces)")
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
	if *session != "" && *kept != "" {
		fmt.Fprintln(stderr, "wink-mcp export: --session and --workspace each pick what to export; give one of them")
		return 2
	}
	// Ctrl-C stops a long export cleanly: no partial patch file is left.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	candidates, release, code := exportCandidates(cache, *session, *kept, stderr)
	defer release()
	if code >= 0 {
		return code
	}
	s, code := chooseExport(ctx, candidates, *session, cache, stderr)
	if code >= 0 {
		return code
	}
	if s.Err != nil {
		fmt.Fprintf(stderr, "wink-mcp export: %s cannot be read: %v\n", describeWhat(s), s.Err)
		return 1
	}
	for i := range s.Mounts {
		s.Mounts[i].ExportIgnored = s.Mounts[i].ExportIgnored || *ignored
	}
	if *out != "" {
		written, err := mounts.ExportChanges(ctx, s.Dir, s.Mounts, *out)
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
			fmt.Fprintf(stderr, "wink-mcp export: %s changed none of its mounted folders; no patch written\n", describeWhat(s))
		}
		return 0
	}
	var changeable []workspace.MountInfo
	for _, m := range s.Mounts {
		if m.Mode != workspace.MountReadOnly {
			changeable = append(changeable, m)
		}
	}
	if len(changeable) == 0 {
		fmt.Fprintf(stderr, "wink-mcp export: %s mounts its folders read-only (%s): nothing to export\n", describeWhat(s), describeMounts(s))
		return 0
	}
	if len(changeable) != 1 {
		fmt.Fprintf(stderr, "wink-mcp export: %s has %d folders that can change (%s); write their patches with --out DIR\n", describeWhat(s), len(changeable), describeMounts(s))
		return 2
	}
	ex, err := mounts.ExportMount(ctx, s.Dir, changeable[0], stdout)
	if err != nil {
		fmt.Fprintf(stderr, "wink-mcp export: %v\n", err)
		return 1
	}
	printLeftOut(stderr, ex.LeftOut)
	if ex.Changed == 0 {
		fmt.Fprintf(stderr, "wink-mcp export: %s changed nothing in %s; the patch is empty\n", describeWhat(s), display.Text(changeable[0].HostPath))
		return 0
	}
	fmt.Fprintf(stderr, "wink-mcp export: %s: %s in %s\n", describeWhat(s), plural(ex.Changed, "changed path", "changed paths"), display.Text(changeable[0].HostPath))
	return 0
}

// printLeftOut names the changes a patch does not hold.
func printLeftOut(stderr io.Writer, left []string) {
	for _, line := range left {
		fmt.Fprintf(stderr, "wink-mcp export: not in the patch: %s\n", display.Text(line))
	}
}

// describeMounts names a session's mounted folders, or why they cannot
// be read.
func describeMounts(s workspace.SessionRecord) string {
	if s.Err != nil {
		return "cannot be read: " + s.Err.Error()
	}
	var parts []string
	for _, m := range s.Mounts {
		parts = append(parts, fmt.Sprintf("%s at /workspace/%s (%s)", display.Text(m.HostPath), display.Text(m.Path), m.Mode))
	}
	return strings.Join(parts, ", ")
}
