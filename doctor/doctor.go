// Package doctor checks that a host can run wink-mcp's workspaces with a
// given configuration: the Podman CLI and service, the OCI runtime and
// ulimits against the host's quirks, the image, the cache directory, the
// agent binary, and a real hardened container, started and removed. Each
// check prints one line, and a fix when it fails.
package doctor

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/wink-mcp/wink-mcp/workspace"
)

// Status is the outcome of one check.
type Status int

// Statuses, from best to worst.
const (
	OK Status = iota
	// Skip means the check could not run because an earlier one failed.
	Skip
	// Warn means wink-mcp works, with a caveat.
	Warn
	// Fail means wink-mcp cannot serve until it is fixed.
	Fail
)

func (s Status) String() string {
	return [...]string{"ok", "skip", "warn", "FAIL"}[s]
}

// Result is what one check found.
type Result struct {
	Name   string
	Status Status
	// Detail says what was found.
	Detail string
	// Fix says what to do about a warning or a failure.
	Fix string
}

// Run checks the host against cfg, through the engine cfg.Engine (which
// must be set), writes one line per check to out, and reports whether
// wink-mcp is ready to serve.
func Run(ctx context.Context, cfg workspace.Config, out io.Writer, log *slog.Logger, opts ...Option) bool {
	d := &doctor{cfg: cfg, log: log, svc: workspace.NewService(cfg), host: localHost{}}
	for _, o := range opts {
		o(d)
	}
	return run(ctx, d, out)
}

func run(ctx context.Context, d *doctor, out io.Writer) bool {
	service := "Podman service " + orDefault(d.cfg.Engine.Service().Address, "(default sockets)")
	if d.pods() {
		service = "Kubernetes API server of " + orDefault(d.cfg.Engine.Service().Address, "the in-cluster config, else $KUBECONFIG, else ~/.kube/config")
	}
	fmt.Fprintf(out, "wink-mcp doctor: image %s, %s\n\n", strings.Join(d.cfg.ImageChoices(), " or else "), service)
	var results []Result
	for _, c := range append(d.checks(), d.optionalChecks()...) {
		r := c.run(ctx)
		r.Name = c.name
		results = append(results, r)
		writeResult(out, r)
	}
	return summarize(out, results)
}

// writeResult prints one check: a status, a name and the detail, then the
// fix on its own line.
func writeResult(out io.Writer, r Result) {
	fmt.Fprintf(out, "%-5s %-13s %s\n", r.Status, r.Name, r.Detail)
	if r.Fix != "" && r.Status != OK {
		fmt.Fprintf(out, "%-5s %-13s fix: %s\n", "", "", r.Fix)
	}
}

// summarize prints the verdict and reports whether no check failed.
func summarize(out io.Writer, results []Result) bool {
	var failed, warned []string
	for _, r := range results {
		switch r.Status {
		case Fail:
			failed = append(failed, r.Name)
		case Warn:
			warned = append(warned, r.Name)
		}
	}
	switch {
	case len(failed) > 0:
		fmt.Fprintf(out, "\nnot ready: %d check(s) failed (%s); fix them in order, the first may cause the rest.\n", len(failed), strings.Join(failed, ", "))
		return false
	case len(warned) > 0:
		fmt.Fprintf(out, "\nready, with %d warning(s) (%s).\n", len(warned), strings.Join(warned, ", "))
	default:
		fmt.Fprintln(out, "\nready: wink-mcp can serve with this configuration.")
	}
	return true
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
