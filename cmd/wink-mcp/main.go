// Command wink-mcp is an MCP server that gives each session its own
// hardened Podman container. The same static binary also runs inside those
// containers as their init ("agent"), as the channel relay ("relay") and as
// each command's supervisor ("supervise"); those roles are internal.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/wink-mcp/wink-mcp/agent"
	"github.com/wink-mcp/wink-mcp/doctor"
	"github.com/wink-mcp/wink-mcp/server"
)

// relayDialWait is how long a relay waits for the agent to listen.
const relayDialWait = 10 * time.Second

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
		return runRelay(stderr)
	case "supervise":
		return agent.SuperviseMain(args[1:])
	case "doctor":
		return runDoctor(args[1:], stdout, stderr)
	case "export":
		return runExport(args[1:], os.LookupEnv, stdout, stderr)
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
	srv, err := server.New(cfg)
	if err != nil {
		log.Error("cannot start", "err", err)
		fmt.Fprintf(stderr, "wink-mcp: %v\n", err)
		return 1
	}
	log.Info("starting", "version", server.Version(), "transport", opts.transport)
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
	}
	return 0
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
	if !doctor.Run(ctx, cfg.Workspace, stdout, cfg.Logger) {
		return 1
	}
	return 0
}

// configure parses the serve flags and environment, shared by serve and
// doctor, and sets up logging to stderr; adjust, if not nil, may change the
// log options first. When ok is false the command must exit with code: the
// flags were bad (2) or only asked for help (0).
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

// runAgent runs the agent as the container's init.
func runAgent(args []string, stderr io.Writer) int {
	workspace := "/workspace"
	if len(args) == 2 && args[0] == "--workspace" {
		workspace = args[1]
	}
	log := slog.New(slog.NewTextHandler(stderr, nil)).With("role", "agent")
	a, err := agent.New(agent.Config{Workspace: workspace, Logger: log})
	if err != nil {
		log.Error("cannot start", "err", err)
		return 1
	}
	defer a.Close()
	if err := a.RunInit(context.Background()); err != nil {
		log.Error("stopped", "err", err)
		return 1
	}
	return 0
}

// runRelay hands the exec session's streams (this process's stdin and
// stdout) to the agent, and lives as long as the channel.
func runRelay(stderr io.Writer) int {
	if err := agent.Relay(context.Background(), os.Stdin, os.Stdout, relayDialWait); err != nil {
		fmt.Fprintf(stderr, "wink-mcp relay: %v\n", err)
		return 1
	}
	return 0
}
