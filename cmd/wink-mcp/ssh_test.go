package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Each mistake with the ssh flags stops the start with an error naming the
// flag (or the variable) and what to do; a good set fills the config.
func TestSSHAgentFlags(t *testing.T) {
	t.Parallel()
	known := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(known, []byte("example.org ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	agent := map[string]string{"SSH_AUTH_SOCK": "/run/agent.sock"}
	cases := []struct {
		name string
		args []string
		vars map[string]string
		want string
	}{
		{"no agent in the environment", []string{"--egress", "example.org", "--ssh-agent", "--ssh-known-hosts", known}, nil, "SSH_AUTH_SOCK is not set"},
		{"hosts without the agent", []string{"--ssh-agent-hosts", "example.org"}, agent, "go with --ssh-agent"},
		{"known hosts without the agent", []string{"--ssh-known-hosts", known}, agent, "go with --ssh-agent"},
		{"a bad host pattern", []string{"--egress", "example.org", "--ssh-agent", "--ssh-known-hosts", known, "--ssh-agent-hosts", "*.com"}, agent, "--ssh-agent-hosts"},
		{"a missing known_hosts", []string{"--egress", "example.org", "--ssh-agent", "--ssh-known-hosts", known + ".gone"}, agent, "--ssh-known-hosts"},
		{"no egress", []string{"--ssh-agent", "--ssh-known-hosts", known}, agent, "add --egress"},
		{"Kubernetes", append(append([]string{}, kubeArgs...), "--egress", "example.org", "--ssh-agent", "--ssh-known-hosts", known),
			map[string]string{"SSH_AUTH_SOCK": "/run/agent.sock", "WINK_ALLOW_UNENFORCED_NETWORK_POLICY": "true"}, "--ssh-agent needs the engine's host"},
	}
	for _, c := range cases {
		_, _, err := parseServeFlags(c.args, env(c.vars), io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
	cfg, _, err := parseServeFlags([]string{"--egress", "example.org", "--ssh-agent", "--ssh-known-hosts", known, "--ssh-agent-hosts", "example.org"}, env(agent), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if a := cfg.Workspace.SSHAgent; a == nil || a.Socket != "/run/agent.sock" || a.KnownHosts != known || len(a.Hosts) != 1 {
		t.Fatalf("the config: %+v", a)
	}
}
