package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/egress"
	"github.com/wink-mcp/wink-mcp/profiles"
	"github.com/wink-mcp/wink-mcp/wire"
)

// --ssh-agent writes a readable copy of the known_hosts and the ssh_config
// snippet, mounts both read-only and sets SSH_AUTH_SOCK for sessions (never
// for a setup), and makes each session's proxy reach port 22 and serve the
// agent narrowed by its profile; without it, nothing of that.
func TestSSHLending(t *testing.T) {
	if l, err := newSSHLending(&Config{}); l != nil || err != nil || l.env(false) != nil || l.mounts(false) != nil {
		t.Fatalf("without --ssh-agent: %v %v", l, err)
	}
	dir := t.TempDir()
	known := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(known, []byte("github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := &Config{CacheDir: filepath.Join(dir, "cache"), SSHAgent: &SSHAgent{Socket: "/run/agent.sock", KnownHosts: known, Hosts: []string{"github.com", "*.example.org"}}}
	l, err := newSSHLending(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if l.env(true) != nil || l.mounts(true) != nil || l.env(false)["SSH_AUTH_SOCK"] != wire.SSHAgentSocket {
		t.Fatalf("env: setup %v, session %v", l.env(true), l.env(false))
	}
	for _, m := range l.mounts(false) {
		info, err := os.Stat(m.Source)
		if err != nil || !m.ReadOnly || info.Mode().Perm() != 0o644 {
			t.Errorf("mount %+v: %v %v", m, info, err)
		}
	}
	config, _ := os.ReadFile(l.config)
	for _, want := range []string{"ProxyCommand /.wink/wink-mcp ssh-connect %h %p", "StrictHostKeyChecking yes", "UserKnownHostsFile " + SSHKnownHostsPath} {
		if !strings.Contains(string(config), want) {
			t.Errorf("the ssh_config lacks %q:\n%s", want, config)
		}
	}
	policy, _ := egress.ParsePolicy([]string{"github.com"})
	proxy := egress.Config{Policy: policy}
	l.lend(&proxy, &profiles.Profile{Egress: profiles.Egress{SSHAgentHosts: []string{"*.example.org"}}})
	if _, ok := proxy.Policy.Match("github.com", 22); !ok || proxy.SSHAgent == nil || proxy.SSHAgent == l.agent {
		t.Fatalf("a session's proxy: port 22 %v, agent %v", ok, proxy.SSHAgent)
	}
	plain := egress.Config{Policy: policy}
	l.lend(&plain, nil)
	if plain.SSHAgent != l.agent {
		t.Fatal("a session without a profile does not get the server's agent")
	}
	cfg.SSHAgent.KnownHosts = filepath.Join(dir, "gone")
	if _, err := newSSHLending(cfg); err == nil || !strings.Contains(err.Error(), "--ssh-known-hosts") {
		t.Fatalf("a missing known_hosts: %v", err)
	}
}
