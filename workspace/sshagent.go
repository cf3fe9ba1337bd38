package workspace

import (
	"fmt"
	"net"
	"os"
	"path/filepath"

	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/wink-mcp/wink-mcp/egress"
	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/profiles"
	"github.com/wink-mcp/wink-mcp/wire"
)

// Where a session's container finds what --ssh-agent gives it.
const (
	// SSHKnownHostsPath is the known_hosts the containers' ssh trusts,
	// a read-only copy of --ssh-known-hosts.
	SSHKnownHostsPath = "/etc/wink-mcp/ssh_known_hosts"
	// SSHConfigPath is the ssh_config snippet that sends ssh through the
	// egress proxy; OpenSSH's /etc/ssh/ssh_config includes this directory
	// (Debian, Ubuntu, Fedora, Alpine).
	SSHConfigPath = "/etc/ssh/ssh_config.d/wink-mcp.conf"
)

// SSHAgent is what --ssh-agent lends the sessions.
type SSHAgent struct {
	// Socket is the server's ssh-agent (its SSH_AUTH_SOCK).
	Socket string
	// Hosts limit the hosts the keys may be used for (--ssh-agent-hosts);
	// empty: every host a session may reach.
	Hosts []string
	// KnownHosts is the known_hosts file the containers' ssh trusts
	// (--ssh-known-hosts), read once at start.
	KnownHosts string
}

// sshLending is --ssh-agent at work: the files the containers mount and
// the filter their proxies serve. A nil sshLending changes nothing.
type sshLending struct {
	agent              *egress.SSHAgent
	knownHosts, config string // this machine's copies the containers mount
}

// sshConfig is the snippet the containers' ssh reads: every host through
// the proxy, host keys only from the server user's known_hosts, and no
// connection to a host whose key it does not have.
var sshConfig = fmt.Sprintf(`# Written by wink-mcp (--ssh-agent): ssh goes through the session's egress
# proxy, trusts only the server user's known_hosts, and never adds to it.
Host *
    ProxyCommand %s %s %%h %%p
    UserKnownHostsFile %s
    GlobalKnownHostsFile %s
    StrictHostKeyChecking yes
    UpdateHostKeys no
    IdentityAgent %s
    ForwardAgent no
`, engine.AgentPath, wire.SSHProxyCommand, SSHKnownHostsPath, SSHKnownHostsPath, wire.SSHAgentSocket)

// newSSHLending copies the known_hosts and writes the ssh_config snippet
// under the cache directory; nil without --ssh-agent.
func newSSHLending(cfg *Config) (*sshLending, error) {
	a := cfg.SSHAgent
	if a == nil {
		return nil, nil
	}
	known, err := os.ReadFile(a.KnownHosts)
	if err != nil {
		return nil, fmt.Errorf("--ssh-known-hosts %s: %w (the containers' ssh checks every host key against it)", a.KnownHosts, err)
	}
	hosts, err := egress.ParsePolicy(a.Hosts)
	if err != nil {
		return nil, fmt.Errorf("--ssh-agent-hosts: %w", err)
	}
	dir := filepath.Join(cfg.CacheDir, "ssh")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("writing the sessions' ssh files: %w", err)
	}
	l := &sshLending{knownHosts: filepath.Join(dir, "known_hosts"), config: filepath.Join(dir, "ssh_config")}
	if err := writeReadable(l.knownHosts, known); err != nil {
		return nil, fmt.Errorf("writing the sessions' known_hosts: %w", err)
	}
	if err := writeReadable(l.config, []byte(sshConfig)); err != nil {
		return nil, fmt.Errorf("writing the sessions' ssh_config: %w", err)
	}
	callback, err := knownhosts.New(l.knownHosts)
	if err != nil {
		return nil, fmt.Errorf("--ssh-known-hosts %s: %w", a.KnownHosts, err)
	}
	socket := a.Socket
	l.agent = &egress.SSHAgent{Hosts: hosts, KnownHost: callback,
		Dial: func() (net.Conn, error) { return net.Dial("unix", socket) }}
	return l, nil
}

// env points the containers' ssh at the agent's socket; nothing for a
// profile's setup, which builds an image and uses no key.
func (l *sshLending) env(setup bool) map[string]string {
	if l == nil || setup {
		return nil
	}
	return map[string]string{"SSH_AUTH_SOCK": wire.SSHAgentSocket}
}

// mounts are the known_hosts and the ssh_config snippet, read-only.
func (l *sshLending) mounts(setup bool) []engine.Mount {
	if l == nil || setup {
		return nil
	}
	return []engine.Mount{
		{Source: l.knownHosts, Destination: SSHKnownHostsPath, ReadOnly: true},
		{Source: l.config, Destination: SSHConfigPath, ReadOnly: true},
	}
}

// lend makes cfg's proxy, a session's of profile p, serve the agent
// (narrowed by the profile's egress.ssh_agent_hosts) and reach port 22 of
// the hosts it allows.
func (l *sshLending) lend(cfg *egress.Config, p *profiles.Profile) {
	if l == nil {
		return
	}
	cfg.Policy = egress.WithSSHPort(cfg.Policy)
	if p == nil {
		cfg.SSHAgent = l.agent
		return
	}
	// Checked when the file was read; were it not, no agent rather than
	// one wider than the profile meant.
	if narrower, err := egress.ParsePolicy(p.Egress.SSHAgentHosts); err == nil {
		cfg.SSHAgent = l.agent.Narrowed(narrower)
	}
}

// mergedEnv is a and b in one map, b's variables last; nil for none.
func mergedEnv(a, b map[string]string) map[string]string {
	if len(b) == 0 {
		return a
	}
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
