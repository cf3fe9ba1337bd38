package egress

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// sessionBind is OpenSSH's extension (ssh 8.9 and later) by which a client
// tells its agent which host key signed the connection a signature is for.
const sessionBind = "session-bind@openssh.com"

// userAuthRequest is SSH_MSG_USERAUTH_REQUEST, the message a user
// authentication signature covers, after the session identifier.
const userAuthRequest = 50

// maxDestinations bounds the destinations a session's proxy remembers.
const maxDestinations = 256

// SSHAgent lends a session's containers the server's ssh-agent (the
// server's --ssh-agent): list and sign only, and a signature only for a
// connection whose host key the client bound (OpenSSH's session-bind) and
// which belongs, by the known_hosts, to a host this session's proxy
// carried a connection to and Hosts allows. The keys never leave the
// server's agent.
type SSHAgent struct {
	// Dial connects to the server's ssh-agent (its SSH_AUTH_SOCK).
	Dial func() (net.Conn, error)
	// Hosts are the hosts the keys may be used for (--ssh-agent-hosts);
	// empty: any host the session may reach.
	Hosts Policy
	// KnownHost says whether key is the host key of the host at address
	// (host:port), from the known_hosts the containers get.
	KnownHost ssh.HostKeyCallback
	// narrower, when not empty, must allow a host too (a profile's
	// egress.ssh_agent_hosts; see Narrowed).
	narrower Policy
}

// Narrowed returns a copy of a whose keys may be used only for hosts
// hosts allows as well; a itself for an empty hosts.
func (a *SSHAgent) Narrowed(hosts Policy) *SSHAgent {
	if hosts.Empty() {
		return a
	}
	n := *a
	n.narrower = hosts
	return &n
}

// ErrSSHAgentRefused is wrapped by every request the filter refuses.
var ErrSSHAgentRefused = errors.New("refused by wink-mcp's ssh-agent filter")

// destinations are the host:port pairs a session's proxy carried
// connections to, the most recent maxDestinations.
type destinations struct {
	mu    sync.Mutex
	order []string
	set   map[string]bool
}

// note remembers a connection to host:port.
func (d *destinations) note(host string, port int) {
	hp := net.JoinHostPort(host, strconv.Itoa(port))
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.set == nil {
		d.set = map[string]bool{}
	}
	if d.set[hp] {
		return
	}
	if len(d.order) == maxDestinations {
		delete(d.set, d.order[0])
		d.order = d.order[1:]
	}
	d.order = append(d.order, hp)
	d.set[hp] = true
}

// list returns the destinations, oldest first.
func (d *destinations) list() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.order...)
}

// sshAgentFilter serves one connection of a container's SSH_AUTH_SOCK.
// Bindings last as long as the connection, as OpenSSH's do: ssh opens one
// agent connection for each connection it makes.
type sshAgentFilter struct {
	cfg   *SSHAgent
	up    agent.ExtendedAgent
	seen  *destinations
	bound map[string]string // session identifier -> the host:port it is bound to
	log   *slog.Logger
}

var _ agent.ExtendedAgent = (*sshAgentFilter)(nil)

func (f *sshAgentFilter) refuse(what string) error {
	f.log.Warn("ssh-agent request refused", "request", what)
	return fmt.Errorf("%w: %s", ErrSSHAgentRefused, what)
}

// List returns the server's agent's public keys.
func (f *sshAgentFilter) List() ([]*agent.Key, error) { return f.up.List() }

// Sign signs data if it is a user authentication for a bound connection.
func (f *sshAgentFilter) Sign(key ssh.PublicKey, data []byte) (*ssh.Signature, error) {
	return f.SignWithFlags(key, data, 0)
}

// SignWithFlags signs data if it is a user authentication request whose
// session identifier the client bound to an allowed host's key.
func (f *sshAgentFilter) SignWithFlags(key ssh.PublicKey, data []byte, flags agent.SignatureFlags) (*ssh.Signature, error) {
	var head struct {
		SessionID []byte
		Type      byte
		Rest      []byte `ssh:"rest"`
	}
	if err := ssh.Unmarshal(data, &head); err != nil || head.Type != userAuthRequest {
		return nil, f.refuse("a signature of something other than an SSH user authentication")
	}
	host, ok := f.bound[string(head.SessionID)]
	if !ok {
		return nil, f.refuse("a signature for a connection not bound to an allowed host (the client must be OpenSSH 8.9 or later)")
	}
	sig, err := f.up.SignWithFlags(key, data, flags)
	if err == nil {
		f.log.Info("ssh-agent signed", "host", host, "key", ssh.FingerprintSHA256(key))
	}
	return sig, err
}

// Extension serves session-bind and refuses every other extension.
func (f *sshAgentFilter) Extension(kind string, contents []byte) ([]byte, error) {
	if kind != sessionBind {
		return nil, f.refuse("extension " + kind)
	}
	var req struct {
		HostKey    []byte
		SessionID  []byte
		Signature  []byte
		Forwarding bool
	}
	if err := ssh.Unmarshal(contents, &req); err != nil {
		return nil, f.refuse("a malformed session-bind")
	}
	if req.Forwarding {
		return nil, f.refuse("a session-bind of a forwarded agent (forwarding the agent beyond the container is not offered)")
	}
	key, err := ssh.ParsePublicKey(req.HostKey)
	if err != nil {
		return nil, f.refuse("a session-bind with a malformed host key")
	}
	var sig ssh.Signature
	if err := ssh.Unmarshal(req.Signature, &sig); err != nil || key.Verify(req.SessionID, &sig) != nil {
		return nil, f.refuse("a session-bind whose signature the host key does not verify")
	}
	host := f.allowedHostOf(key)
	if host == "" {
		return nil, f.refuse("a session-bind to host key " + ssh.FingerprintSHA256(key) +
			", which the known_hosts does not give to any host this session connected to and --ssh-agent-hosts allows")
	}
	if f.bound == nil {
		f.bound = map[string]string{}
	}
	f.bound[string(req.SessionID)] = host
	return nil, nil
}

// allowedHostOf returns the destination key belongs to, among those the
// session's proxy carried and Hosts allows, or "".
func (f *sshAgentFilter) allowedHostOf(key ssh.PublicKey) string {
	any := &net.TCPAddr{IP: net.IPv4zero}
	for _, hp := range f.seen.list() {
		host, _, err := net.SplitHostPort(hp)
		if err != nil || !f.cfg.allows(host) {
			continue
		}
		if f.cfg.KnownHost(hp, any, key) == nil {
			return hp
		}
	}
	return ""
}

// allows says whether the keys may be used for host.
func (a *SSHAgent) allows(host string) bool {
	return namesHost(a.Hosts, host) && namesHost(a.narrower, host)
}

// namesHost says whether a rule of p matches host; true for an empty p.
func namesHost(p Policy, host string) bool {
	if p.Empty() {
		return true
	}
	for _, r := range p.rules {
		if matchRule(r, host) {
			return true
		}
	}
	return false
}

// Add is refused: the container cannot give the server's agent keys.
func (f *sshAgentFilter) Add(agent.AddedKey) error { return f.refuse("add a key") }

// Remove is refused.
func (f *sshAgentFilter) Remove(ssh.PublicKey) error { return f.refuse("remove a key") }

// RemoveAll is refused.
func (f *sshAgentFilter) RemoveAll() error { return f.refuse("remove every key") }

// Lock is refused: the container cannot lock the server's agent.
func (f *sshAgentFilter) Lock([]byte) error { return f.refuse("lock the agent") }

// Unlock is refused.
func (f *sshAgentFilter) Unlock([]byte) error { return f.refuse("unlock the agent") }

// Signers is not served: signing goes through Sign.
func (f *sshAgentFilter) Signers() ([]ssh.Signer, error) { return nil, f.refuse("signers") }
