package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/wink-mcp/wink-mcp/egress"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// maxKnownHosts bounds a --ssh-known-hosts file.
const maxKnownHosts = 4 << 20

// sshOptions are --ssh-agent, --ssh-agent-hosts and --ssh-known-hosts.
type sshOptions struct {
	agent      bool
	hosts      []string
	knownHosts string
}

// resolveSSHAgent checks the ssh flags at start: the server's agent named
// by SSH_AUTH_SOCK (through lookup), the hosts' patterns, the known_hosts.
func resolveSSHAgent(w *workspace.Config, o sshOptions, lookup func(string) (string, bool)) error {
	if !o.agent {
		if len(o.hosts) > 0 || o.knownHosts != "" {
			return errors.New("--ssh-agent-hosts and --ssh-known-hosts go with --ssh-agent, which is off")
		}
		return nil
	}
	socket, _ := lookup("SSH_AUTH_SOCK")
	if socket == "" {
		return errors.New("--ssh-agent: SSH_AUTH_SOCK is not set in wink-mcp's environment; start wink-mcp where an ssh-agent runs " +
			"(eval $(ssh-agent); ssh-add KEY) or set SSH_AUTH_SOCK to its socket")
	}
	if _, err := egress.ParsePolicy(o.hosts); err != nil {
		return fmt.Errorf("--ssh-agent-hosts: %w", err)
	}
	known := o.knownHosts
	if known == "" {
		known = "~/.ssh/known_hosts"
	}
	known = expandHome(known)
	info, err := os.Stat(known)
	if err != nil {
		return fmt.Errorf("--ssh-known-hosts: %w (the sessions' ssh checks every host key against it; add the hosts with ssh-keyscan HOST >> %s after checking their keys)", err, known)
	}
	if info.Size() > maxKnownHosts {
		return fmt.Errorf("--ssh-known-hosts %s: %d bytes, more than the %d a known_hosts may hold", known, info.Size(), maxKnownHosts)
	}
	w.SSHAgent = &workspace.SSHAgent{Socket: socket, Hosts: o.hosts, KnownHosts: known}
	return nil
}
