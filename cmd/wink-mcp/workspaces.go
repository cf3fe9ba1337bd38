package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/display"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// runWorkspaces lists, shows and removes the kept workspaces under the
// cache directory (those sessions opened with --workspace or
// ?workspace=NAME, and those handed over). It exits 2 on bad usage.
func runWorkspaces(args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("wink-mcp workspaces", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: wink-mcp workspaces [--cache-dir DIR] [list]\n"+
			"       wink-mcp workspaces [--cache-dir DIR] show NAME\n"+
			"       wink-mcp workspaces [--cache-dir DIR] rm NAME\n"+
			"       wink-mcp workspaces [--cache-dir DIR] [--dry-run] prune --older-than DURATION\n"+
			"       wink-mcp workspaces --engine kubernetes [--kubeconfig FILE] [--namespace NS] [--checkpoint-dir DIR] [list | rm NAME]\n\n"+
			"Kept workspaces outlive their sessions: their files, their mounted folders' changes and their checkpoints\n"+
			"stay under the cache directory until removed. A workspace a session has open is never removed.\n"+
			"With --engine kubernetes they are in the cluster: a PersistentVolumeClaim and a Lease each, their checkpoints\n"+
			"in the replicas' shared --checkpoint-dir.\n\n")
		fs.PrintDefaults()
	}
	cache := workspace.DefaultConfig().CacheDir
	if v, ok := lookup("WINK_CACHE"); ok && v != "" {
		cache = v
	}
	fs.StringVar(&cache, "cache-dir", cache, "the cache directory the server uses [WINK_CACHE]")
	cluster := bindClusterFlags(fs, lookup)
	olderThan := fs.Duration("older-than", 0, "prune: remove the workspaces last used longer ago than this (e.g. 720h)")
	dryRun := fs.Bool("dry-run", false, "prune: only name what would be removed")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	rest := fs.Args()
	// Flags may also follow the command: `prune --older-than 720h`.
	if len(rest) > 1 {
		if err := fs.Parse(rest[1:]); err != nil {
			return 2
		}
		rest = append(rest[:1], fs.Args()...)
	}
	cmd := "list"
	if len(rest) > 0 {
		cmd = rest[0]
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "wink-mcp workspaces %s: %v\n", cmd, err)
		return 1
	}
	usage := func(msg string) int {
		fmt.Fprintf(stderr, "wink-mcp workspaces %s: %s (see -h)\n", cmd, msg)
		return 2
	}
	if cluster.engine != enginePodman {
		return cluster.run(cmd, cache, rest, stdout, stderr)
	}
	switch {
	case cmd == "list" && len(rest) <= 1:
		list, err := workspace.ListKept(cache)
		if err != nil {
			return fail(err)
		}
		if len(list) == 0 {
			fmt.Fprintf(stdout, "no kept workspaces under %s\n", cache)
			return 0
		}
		fmt.Fprintf(stdout, "%-24s %-19s %9s %9s  %s\n", "NAME", "LAST USED", "FILES", "CHECKPTS", "STATE")
		for _, k := range list {
			fmt.Fprintln(stdout, k.Summary())
		}
		return 0
	case cmd == "show" && len(rest) == 2:
		k, err := workspace.ShowKept(cache, rest[1])
		if err != nil {
			return fail(err)
		}
		printKept(stdout, k)
		printKeptMounts(stdout, cache, k.Name)
		return 0
	case cmd == "rm" && len(rest) == 2:
		if err := workspace.RemoveKept(cache, rest[1]); err != nil {
			return fail(err)
		}
		fmt.Fprintf(stdout, "removed workspace %s\n", rest[1])
		return 0
	case cmd == "prune" && len(rest) == 1:
		if *olderThan <= 0 {
			return usage("needs --older-than, a duration such as 720h")
		}
		names, err := workspace.PruneKept(cache, time.Now().Add(-*olderThan), *dryRun)
		verb := "removed"
		if *dryRun {
			verb = "would remove"
		}
		for _, n := range names {
			fmt.Fprintf(stdout, "%s %s\n", verb, n)
		}
		if err != nil {
			return fail(err)
		}
		return 0
	}
	return usage("unknown command or wrong arguments")
}

// printKept shows one kept workspace in full.
func printKept(w io.Writer, k workspace.KeptWorkspace) {
	fmt.Fprintf(w, "workspace  %s\ndirectory  %s\ncreated    %s\nlast used  %s\n", k.Name, k.Dir,
		k.Created.Local().Format(time.RFC3339), k.LastUsed.Local().Format(time.RFC3339))
	state := "free"
	if k.Owner != nil {
		state = k.Owner.String()
	}
	fmt.Fprintf(w, "state      %s\nfiles      %s on disk\ncheckpoints %d, %s\n", state, checkpoints.FormatBytes(k.FilesBytes),
		len(k.Checkpoints), checkpoints.FormatBytes(k.StoreBytes))
	for _, cp := range k.Checkpoints {
		what := display.Text(cp.Message)
		if cp.Auto != "" {
			what = "(automatic: " + cp.Auto + ")"
		}
		fmt.Fprintf(w, "  %-5s %s  %d files, %s  %s\n", cp.ID, cp.Created.Local().Format(time.RFC3339), cp.Files, checkpoints.FormatBytes(cp.Bytes), what)
	}
	if k.Err != nil {
		fmt.Fprintf(w, "error      %v\n", k.Err)
	}
}

// printKeptMounts names the host folders a kept workspace mounts, and how
// to export their changes.
func printKeptMounts(w io.Writer, cache, name string) {
	rec, release, err := workspace.OpenKept(cache, name)
	if err != nil {
		return
	}
	defer release()
	switch {
	case rec.Err != nil:
		fmt.Fprintf(w, "mounts     cannot be read: %v\n", rec.Err)
	case len(rec.Mounts) == 0:
		fmt.Fprintln(w, "mounts     none")
	default:
		fmt.Fprintf(w, "mounts     %s\nexport     wink-mcp export%s --workspace %s (their changes as patches)\n", describeMounts(rec), cacheFlag(cache), name)
	}
}
