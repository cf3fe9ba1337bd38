// Command wink-mcp is an MCP server that gives each session its own
// hardened Podman container. The same static binary also runs inside those
// containers as their init ("agent"), as the channel relay ("relay") and as
// each command's supervisor ("supervise"); those roles are internal.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/sirupsen/logrus"

	"github.com/wink-mcp/wink-mcp/doctor"
	"github.com/wink-mcp/wink-mcp/engine/kubernetes"
	"github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/wire"
	"github.com/wink-mcp/wink-mcp/workspace"
	"github.com/wink-mcp/wink-mcp/workspace/forkcopy"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	role := "serve"
	if len(args) > 0 {
		role = args[0]
	}
	switch role {
	case "agent":
		return runAgent(args[1:], stderr)
	case "relay":
		return runRelay(args[1:], stderr)
	case wire.SSHProxyCommand:
		return runSSHConnect(args[1:], stdin, stdout, stderr)
	case "supervise":
		return runSupervise(args[1:])
	case forkcopy.Command:
		return runForkCopy(args[1:], stderr)
	case "install-agent":
		return runInstallAgent(args[1:], stderr)
	case kubernetes.ProbeCommand:
		return runProbeNetwork(args[1:], stdout, stderr)
	case kubernetes.AwaitCutOffCommand:
		return runAwaitCutOff(args[1:], stdout, stderr)
	case "doctor":
		return runDoctor(args[1:], stdout, stderr)
	case "export":
		return runExport(args[1:], os.LookupEnv, stdout, stderr)
	case "profiles":
		return runProfiles(args[1:], stdout, stderr)
	case "workspaces":
		return runWorkspaces(args[1:], os.LookupEnv, stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "wink-mcp", server.Version())
		return 0
	case "serve":
		if len(args) > 0 {
			args = args[1:]
		}
	}
	return runServe(args, stdin, stdout, stderr)
}

// runServe serves MCP until stdin ends (stdio) or a signal arrives, then
// removes every container it made.
func runServe(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cfg, opts, code, ok := configure("wink-mcp", args, stderr, nil)
	if !ok {
		return code
	}
	log := cfg.Logger

	// A client that goes away closes our stdout and stderr; without this the
	// next write would kill the process with SIGPIPE before it removed its
	// containers. Ignored, such writes just fail.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	logStatsOnSignal(ctx, log)
	var srv *server.Server
	stopObserving, err := observe(ctx, &cfg, opts.observe)
	if err == nil {
		defer stopObserving()
		srv, err = server.New(cfg)
	}
	if err != nil {
		log.Error("cannot start", "err", err)
		fmt.Fprintf(stderr, "wink-mcp: %v\n", err)
		return 1
	}
	closed := make(chan struct{})
	defer close(closed)
	go exitOnSecondSignal(srv, log, stderr, closed)
	log.Info("starting", "version", server.Version(), "transport", opts.transport)
	if opts.service.connection != "" {
		log.Info("podman connection chosen", "connection", opts.service.connection, "uri", opts.service.url)
	}
	if opts.transport == server.TransportStdio {
		err = srv.ServeStdio(ctx, stdin, stdout)
	} else {
		err = srv.ServeHTTP(ctx, opts.transport)
	}
	closeErr := srv.Close()
	if err != nil {
		log.Error("serving stopped", "err", err)
		return 1
	}
	if closeErr != nil {
		log.Warn("shutdown incomplete", "err", closeErr)
		if errors.Is(closeErr, workspace.ErrChangesKept) {
			fmt.Fprintf(stderr, "wink-mcp: %v\n", closeErr)
		}
	}
	return 0
}

// exitOnSecondSignal exits at once when a second SIGINT or SIGTERM
// arrives (the first starts the shutdown, which a client closing stdin
// may have started before it): the shutdown stops waiting for containers
// and exports, saying which sessions' changes are kept and how they will
// be exported. Nothing unexported has been deleted by then (a session's
// files go only after its patches are on disk), and the next wink-mcp
// removes the containers left. It returns when closed is closed.
func exitOnSecondSignal(srv *server.Server, log *slog.Logger, stderr io.Writer, closed <-chan struct{}) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	for n := 0; ; {
		select {
		case <-closed:
			return
		case <-sigs:
			if n++; n < 2 {
				continue
			}
		}
		kept := srv.KeptForExport()
		log.Error("a second signal: exiting without waiting for the shutdown", "kept_for_export", kept)
		fmt.Fprintln(stderr, "wink-mcp: a second signal: exiting without waiting for containers to be removed (the next wink-mcp to start removes them)")
		for _, k := range kept {
			fmt.Fprintf(stderr, "wink-mcp: changes not exported yet are kept: %s\n", k)
		}
		os.Exit(1)
	}
}

// runDoctor checks the host against the configuration serve would use,
// printing one line per check; it exits 1 when wink-mcp is not ready.
func runDoctor(args []string, stdout, stderr io.Writer) int {
	cfg, _, code, ok := configure("wink-mcp doctor", args, stderr, func(l *logOptions) {
		// The checks' lines are the output; info logs would bury them.
		if l.level == "info" {
			l.level = "warn"
		}
	})
	if !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if !doctor.Run(ctx, cfg.Workspace, stdout, cfg.Logger, doctor.WithOAuthIssuer(cfg.HTTP.OAuth.Issuer)) {
		return 1
	}
	return 0
}

// configure parses the serve flags and environment, shared by serve and
// doctor, sets up logging to stderr and builds the container engine the
// flags name; adjust, if not nil, may change the log options first. When
// ok is false the command must exit with code: the flags were bad (2) or
// only asked for help (0).
func configure(command string, args []string, stderr io.Writer, adjust func(*logOptions)) (cfg server.Config, opts serveOptions, code int, ok bool) {
	cfg, opts, err := parseServeFlags(args, os.LookupEnv, stderr)
	if err == errHelp {
		return cfg, opts, 0, false
	}
	if err == nil {
		if adjust != nil {
			adjust(&opts.logs)
		}
		cfg.Logger, err = newLogger(stderr, opts.logs)
	}
	if err == nil {
		cfg.Logger = slog.New(server.RedactingHandler(cfg.Logger.Handler(), cfg.Workspace.PassedEnv))
		// What a library prints through the log package (x/crypto's agent
		// server prints each request it refuses) becomes a record of
		// cfg.Logger's format, on stderr, redacted like the others.
		slog.SetDefault(cfg.Logger)
		cfg.Workspace.Engine, err = newEngine(cfg.Workspace, opts, cfg.Logger)
		cfg.Workspace.ImageBuilder = imageBuilder(cfg.Workspace.Engine)
		if f := opts.project; f != nil {
			cfg.Logger.Info("project found", "event", "project_found", "file", f.File, "source", f.Source,
				"why", f.Why, "image", f.Image, "dockerfile", f.Dockerfile, "ignored", f.Ignored)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", command, err)
		return cfg, opts, 2, false
	}
	// The Podman bindings log through logrus; stdout may belong to the
	// protocol. Their warnings are teardown noise (half-closing a socket
	// they already closed); errors still show.
	logrus.SetOutput(stderr)
	logrus.SetLevel(logrus.ErrorLevel)
	return cfg, opts, 0, true
}
