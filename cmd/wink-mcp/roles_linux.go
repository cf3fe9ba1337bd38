package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/wink-mcp/wink-mcp/agent"
	"github.com/wink-mcp/wink-mcp/wire"
)

// relayDialWait is how long a relay waits for the agent to listen.
const relayDialWait = 10 * time.Second

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
// stdout) to the agent, and lives as long as the channel: the request
// channel, or with the argument "tunnel" the egress tunnel.
func runRelay(args []string, stderr io.Writer) int {
	var err error
	if len(args) == 3 && args[0] == "tunnel" && args[1] == "--socket" {
		err = agent.RelaySocket(context.Background(), args[2], os.Getenv(wire.TunnelNonceEnv), relayDialWait)
	} else {
		err = agent.Relay(context.Background(), os.Stdin, os.Stdout, relayDialWait, len(args) > 0 && args[0] == "tunnel")
	}
	if err != nil {
		fmt.Fprintf(stderr, "wink-mcp relay: %v\n", err)
		return 1
	}
	return 0
}

// runSupervise runs one command's supervisor.
func runSupervise(args []string) int { return agent.SuperviseMain(args) }

// runSSHConnect is ssh's ProxyCommand in the containers (--ssh-agent's
// ssh_config): it carries ssh's connection to HOST PORT through the
// session's egress proxy.
func runSSHConnect(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 2 {
		fmt.Fprintf(stderr, "usage: wink-mcp %s HOST PORT (ssh's ProxyCommand, set by --ssh-agent)\n", wire.SSHProxyCommand)
		return 2
	}
	if err := agent.SSHConnect(args[0], args[1], stdin, stdout); err != nil {
		fmt.Fprintf(stderr, "wink-mcp %s: %v\n", wire.SSHProxyCommand, err)
		return 1
	}
	return 0
}
