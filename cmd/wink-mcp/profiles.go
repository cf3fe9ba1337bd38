package main

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/display"
	"github.com/wink-mcp/wink-mcp/profiles"
	"github.com/wink-mcp/wink-mcp/workspace"
	"github.com/wink-mcp/wink-mcp/workspace/images"
)

const profilesUsage = "usage: wink-mcp profiles list [flags]\n" +
	"       wink-mcp profiles build [NAME...] [flags]\n" +
	"       wink-mcp profiles prune [flags]\n" +
	"       wink-mcp profiles schema\n\n" +
	"list shows each profile of --profiles FILE (WINK_PROFILES) and the built-in ones, its image and whether it is built;\n" +
	"build runs the setup of the named profiles (default: all) unless their image is built;\n" +
	"prune removes the images of the file's profiles that no profile of it uses now (other files' stay);\n" +
	"schema prints the file's JSON Schema, for editors. The flags are serve's (see wink-mcp -h).\n" + pushFlagsUsage

// runProfiles lists and builds the profiles' images, or prints the
// profiles file's schema. It exits 2 on bad usage, 1 when a build fails.
func runProfiles(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stderr, profilesUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, rest := args[0], args[1:]
	var names []string
	for len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		names, rest = append(names, rest[0]), rest[1:]
	}
	switch {
	case cmd == "schema" && len(rest)+len(names) == 0:
		_, _ = stdout.Write(profiles.Schema())
		return 0
	case cmd == "schema":
		fmt.Fprintf(stderr, "wink-mcp profiles schema: takes no arguments\n%s", profilesUsage)
		return 2
	case cmd != "list" && cmd != "build" && cmd != "prune", cmd != "build" && len(names) > 0:
		fmt.Fprintf(stderr, "wink-mcp profiles: unknown command %q\n%s", strings.Join(args, " "), profilesUsage)
		return 2
	}
	push, rest, err := takePushFlags(rest)
	if err == nil && push.repository != "" && cmd != "build" {
		err = fmt.Errorf("--push goes with profiles build")
	}
	if err != nil {
		fmt.Fprintf(stderr, "wink-mcp profiles %s: %v\n%s", cmd, err, profilesUsage)
		return 2
	}
	cfg, opts, code, ok := configure("wink-mcp profiles "+cmd, rest, stderr, nil)
	if !ok {
		return code
	}
	if opts.engine.name != enginePodman && cmd != "list" {
		fmt.Fprintf(stderr, "wink-mcp profiles %s: profile images are built with Podman, not on the cluster: drop --engine %s; "+
			"--push REPOSITORY sends them to a registry the cluster pulls from\n", cmd, opts.engine.name)
		return 2
	}
	if cfg.Workspace.Profiles == nil {
		fmt.Fprintf(stderr, "wink-mcp profiles %s: no profiles: pass --profiles FILE or set WINK_PROFILES, or drop --no-builtin-profiles\n", cmd)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if cmd == "list" {
		found, err := workspace.NewService(cfg.Workspace).ProfileImages(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "wink-mcp profiles list: %v\n", err)
			return 1
		}
		writeProfiles(stdout, found)
		return 0
	}
	if len(names) == 0 {
		names = cfg.Workspace.Profiles.Names()
	}
	for _, name := range names {
		if _, err := cfg.Workspace.Profiles.Get(name); err != nil {
			fmt.Fprintf(stderr, "wink-mcp profiles build: %v\n", err)
			return 2
		}
	}
	mgr, err := workspace.NewManager(cfg.Workspace, cfg.Logger)
	if err != nil {
		fmt.Fprintf(stderr, "wink-mcp profiles %s: %v\n", cmd, err)
		return 1
	}
	defer mgr.Close(context.WithoutCancel(ctx))
	if cmd == "prune" {
		removed, kept, err := mgr.Images().Prune(ctx)
		for _, image := range removed {
			fmt.Fprintf(stdout, "removed %s\n", image)
		}
		for _, image := range kept {
			fmt.Fprintf(stdout, "kept %s: another file's; prune it with that file\n", image)
		}
		if err != nil {
			fmt.Fprintf(stderr, "wink-mcp profiles prune: %v\n", err)
			return 1
		}
		return 0
	}
	failed := 0
	for _, name := range names {
		start := time.Now()
		image, built, err := mgr.Images().BuildProfile(ctx, name, func(p workspace.Progress) { printProgress(stderr, name, p) })
		switch {
		case err != nil:
			fmt.Fprintf(stderr, "wink-mcp profiles build: %s: %v\n", name, err)
			failed++
		case built:
			fmt.Fprintf(stdout, "%s: built %s in %.1f s\n", name, image, time.Since(start).Seconds())
		default:
			fmt.Fprintf(stdout, "%s: %s is up to date\n", name, image)
		}
		if p, _ := cfg.Workspace.Profiles.Get(name); err == nil && push.repository != "" && len(p.Setup) == 0 { // Get: checked above
			fmt.Fprintf(stdout, "%s: not pushed: without setup commands its sessions run its image as named\n", name)
		} else if err == nil && push.repository != "" {
			if err := pushProfile(ctx, cfg.Workspace.Engine, stdout, p, image, cfg.Workspace.ImageChoices(), push); err != nil {
				fmt.Fprintf(stderr, "wink-mcp profiles build: %s: %v\n", name, err)
				failed++
			}
		}
	}
	if failed > 0 {
		return 1
	}
	return 0
}

// printProgress prints a line of a profile's setup output, which the
// setup's commands (and what they download) wrote.
func printProgress(w io.Writer, profile string, p workspace.Progress) {
	fmt.Fprintf(w, "%s: %ds %s\n", profile, p.ElapsedMillis/1000, display.Text(p.Line))
}

// writeProfiles prints the profiles' images as a table.
func writeProfiles(w io.Writer, found []images.ProfileImage) {
	t := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(t, "PROFILE\tBASE\tIMAGE\tBUILT\tSIZE\tDESCRIPTION")
	for _, pi := range found {
		image, built, size := pi.Image, "no", "-"
		switch {
		case pi.Base == "":
			pi.Base, image, built = "(missing: pulled on first use)", "-", "-"
		case pi.Image == "":
			image, built = "(the base: no setup)", "-"
		case pi.Built:
			built, size = pi.Created.Format(time.DateTime), checkpoints.FormatBytes(pi.Size)
		}
		fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%s\t%s\n", pi.Profile, pi.Base, image, built, size, display.Text(pi.Description))
	}
	t.Flush()
}
