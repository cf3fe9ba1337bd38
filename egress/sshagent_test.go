package egress

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/wink-mcp/wink-mcp/wire"
)

// countingKeyring is a real in-memory agent that counts the signatures it
// makes, so a test sees a refusal came before any.
type countingKeyring struct {
	agent.ExtendedAgent
	signs atomic.Int64
}

func (k *countingKeyring) SignWithFlags(key ssh.PublicKey, data []byte, flags agent.SignatureFlags) (*ssh.Signature, error) {
	k.signs.Add(1)
	return k.ExtendedAgent.SignWithFlags(key, data, flags)
}

func (k *countingKeyring) Sign(key ssh.PublicKey, data []byte) (*ssh.Signature, error) {
	return k.SignWithFlags(key, data, 0)
}

// sshAgentRig is a session's proxy with an ssh-agent in front of a real
// keyring holding one user key, a known_hosts file giving hostKey to the
// loopback listener sshAddr, and a second host key no file names.
type sshAgentRig struct {
	proxy            string
	keyring          *countingKeyring
	userKey          ssh.PublicKey
	hostKey, rogue   ssh.Signer
	sshAddr, refused string // host:port of a listener the proxy may reach, and one --ssh-agent-hosts refuses
}

func newSSHAgentRig(t *testing.T, agentHosts []string) *sshAgentRig {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	r := &sshAgentRig{keyring: &countingKeyring{ExtendedAgent: agent.NewKeyring().(agent.ExtendedAgent)}, sshAddr: ln.Addr().String()}
	_, port, _ := net.SplitHostPort(r.sshAddr)
	r.refused = "localhost:" + port
	_, userPriv, _ := ed25519.GenerateKey(rand.Reader)
	if err := r.keyring.Add(agent.AddedKey{PrivateKey: userPriv}); err != nil {
		t.Fatal(err)
	}
	signer, _ := ssh.NewSignerFromKey(userPriv)
	r.userKey = signer.PublicKey()
	for _, k := range []*ssh.Signer{&r.hostKey, &r.rogue} {
		_, priv, _ := ed25519.GenerateKey(rand.Reader)
		*k, _ = ssh.NewSignerFromKey(priv)
	}
	known := filepath.Join(t.TempDir(), "known_hosts")
	line := knownhosts.Line([]string{r.sshAddr, r.refused}, r.hostKey.PublicKey())
	if err := os.WriteFile(known, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	callback, err := knownhosts.New(known)
	if err != nil {
		t.Fatal(err)
	}
	hosts, err := ParsePolicy(agentHosts)
	if err != nil {
		t.Fatal(err)
	}
	upstream := func() (net.Conn, error) {
		a, b := net.Pipe()
		go agent.ServeAgent(r.keyring, b)
		return a, nil
	}
	policy, _ := ParsePolicy([]string{r.sshAddr, r.refused})
	resolve := func(_ context.Context, host string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	s := NewSession(Config{Policy: policy, Resolve: resolve, SSHAgent: &SSHAgent{Dial: upstream, Hosts: hosts, KnownHost: callback}}, "test")
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(pl)
	t.Cleanup(func() { pl.Close() })
	r.proxy = pl.Addr().String()
	return r
}

// connect opens a CONNECT to authority through the proxy and returns the
// connection and the status line's code.
func connectVia(t *testing.T, proxy, authority string) (net.Conn, int) {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", authority, authority)
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	return c, resp.StatusCode
}

// agentClient is a client of the container's SSH_AUTH_SOCK, as the agent
// carries it: a CONNECT to wire.SSHAgentAuthority.
func (r *sshAgentRig) agentClient(t *testing.T) agent.ExtendedAgent {
	t.Helper()
	c, code := connectVia(t, r.proxy, wire.SSHAgentAuthority)
	if code != http.StatusOK {
		t.Fatalf("CONNECT to the agent: %d", code)
	}
	return agent.NewClient(c)
}

// bind sends OpenSSH's session-bind for sid, signed by host.
func bind(a agent.ExtendedAgent, host ssh.Signer, sid []byte, forwarding bool) error {
	sig, err := host.Sign(rand.Reader, sid)
	if err != nil {
		return err
	}
	_, err = a.Extension(sessionBind, ssh.Marshal(struct {
		HostKey, SessionID, Signature []byte
		Forwarding                    bool
	}{host.PublicKey().Marshal(), sid, ssh.Marshal(sig), forwarding}))
	return err
}

// userAuth is what ssh asks its agent to sign to log in as git over the
// connection sid.
func userAuth(sid []byte, key ssh.PublicKey) []byte {
	return ssh.Marshal(struct {
		SessionID []byte
		Type      byte
		User      string
		Service   string
		Method    string
		Signed    bool
		Algo      string
		PubKey    []byte
	}{sid, userAuthRequest, "git", "ssh-connection", "publickey", true, key.Type(), key.Marshal()})
}

// A container's agent lists the keys and signs the log-in of a connection
// the proxy carried to a host whose known key the client bound it to;
// every other request is refused, and a refused signature is never made.
func TestSSHAgentSignsOnlyBoundLogins(t *testing.T) {
	r := newSSHAgentRig(t, nil)
	a := r.agentClient(t)
	keys, err := a.List()
	if err != nil || len(keys) != 1 || keys[0].String() != r.userKey.Type()+" "+keyBase64(r.userKey) {
		t.Fatalf("list: %v %v", keys, err)
	}
	sid := []byte("session-one")
	if _, err := a.Sign(r.userKey, userAuth(sid, r.userKey)); err == nil {
		t.Fatal("a signature without a session-bind was made")
	}
	if err := bind(a, r.hostKey, sid, false); err == nil {
		t.Fatal("a session-bind to a host the session never connected to was accepted")
	}
	if _, code := connectVia(t, r.proxy, r.sshAddr); code != http.StatusOK {
		t.Fatalf("CONNECT to the ssh host: %d", code)
	}
	for name, err := range map[string]error{
		"a host key the known_hosts does not name": bind(a, r.rogue, sid, false),
		"a forwarded agent":                        bind(a, r.hostKey, sid, true),
		"a signature by another key":               badBind(a, r.hostKey, r.rogue, sid),
	} {
		if err == nil {
			t.Errorf("a session-bind with %s was accepted", name)
		}
	}
	if _, err := a.Sign(r.userKey, userAuth(sid, r.userKey)); err == nil {
		t.Fatal("a signature after refused session-binds was made")
	}
	if n := r.keyring.signs.Load(); n != 0 {
		t.Fatalf("the server's agent made %d signatures before any binding", n)
	}
	if err := bind(a, r.hostKey, sid, false); err != nil {
		t.Fatalf("the session-bind of a carried connection to its known host: %v", err)
	}
	sig, err := a.Sign(r.userKey, userAuth(sid, r.userKey))
	if err != nil || r.userKey.Verify(userAuth(sid, r.userKey), sig) != nil {
		t.Fatalf("the bound log-in's signature: %v", err)
	}
	for name, data := range map[string][]byte{
		"another connection's log-in": userAuth([]byte("session-two"), r.userKey),
		"data that is no log-in":      ssh.Marshal(struct{ SessionID, Data []byte }{sid, []byte("a commit to sign")}),
		"junk":                        []byte("x"),
	} {
		if _, err := a.Sign(r.userKey, data); err == nil {
			t.Errorf("%s was signed", name)
		}
	}
	// A binding lasts as long as its agent connection, as OpenSSH's does.
	if _, err := r.agentClient(t).Sign(r.userKey, userAuth(sid, r.userKey)); err == nil {
		t.Error("another agent connection used the first one's binding")
	}
	if n := r.keyring.signs.Load(); n != 1 {
		t.Errorf("the server's agent made %d signatures, want 1", n)
	}
}

func badBind(a agent.ExtendedAgent, claimed, signer ssh.Signer, sid []byte) error {
	sig, err := signer.Sign(rand.Reader, sid)
	if err != nil {
		return err
	}
	_, err = a.Extension(sessionBind, ssh.Marshal(struct {
		HostKey, SessionID, Signature []byte
		Forwarding                    bool
	}{claimed.PublicKey().Marshal(), sid, ssh.Marshal(sig), false}))
	return err
}

func keyBase64(k ssh.PublicKey) string {
	return strings.TrimSpace(strings.TrimPrefix(string(ssh.MarshalAuthorizedKey(k)), k.Type()+" "))
}

// The container cannot add, remove or lock the server's keys, nor reach
// any other extension; the server's agent is as it was.
func TestSSHAgentRefusesChanges(t *testing.T) {
	r := newSSHAgentRig(t, nil)
	a := r.agentClient(t)
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	for name, err := range map[string]error{
		"add":        a.Add(agent.AddedKey{PrivateKey: priv}),
		"remove":     a.Remove(r.userKey),
		"remove all": a.RemoveAll(),
		"lock":       a.Lock([]byte("pass")),
		"unlock":     a.Unlock([]byte("pass")),
		"extension":  extensionErr(a.Extension("query", nil)),
	} {
		if err == nil {
			t.Errorf("%s was not refused", name)
		}
	}
	keys, err := r.keyring.List() // a locked keyring lists nothing
	if err != nil || len(keys) != 1 {
		t.Fatalf("the server's agent after the refusals: %d keys, %v", len(keys), err)
	}
}

func extensionErr(_ []byte, err error) error { return err }

// --ssh-agent-hosts limits the hosts a binding may name, even ones the
// proxy carries connections to.
func TestSSHAgentHostsLimitBindings(t *testing.T) {
	r := newSSHAgentRig(t, []string{"127.0.0.1"})
	for _, hp := range []string{r.refused, r.sshAddr} {
		if _, code := connectVia(t, r.proxy, hp); code != http.StatusOK {
			t.Fatalf("CONNECT %s: %d", hp, code)
		}
	}
	a := r.agentClient(t)
	f := &sshAgentFilter{cfg: &SSHAgent{Hosts: mustPolicy(t, "example.org")}}
	if f.cfg.allows("127.0.0.1") || !f.cfg.allows("example.org") {
		t.Fatal("allows does not follow its patterns")
	}
	if err := bind(a, r.hostKey, []byte("sid"), false); err != nil {
		t.Fatalf("a binding to the allowed 127.0.0.1: %v", err)
	}
	// A profile's egress.ssh_agent_hosts narrows, never widens.
	for _, c := range []struct {
		server, profile []string
		want            bool
	}{{nil, []string{"127.0.0.1"}, true}, {nil, []string{"localhost"}, false}, {[]string{"localhost"}, []string{"127.0.0.1"}, false},
		{[]string{"127.0.0.1", "*.example.org"}, []string{"127.0.0.1"}, true}, {[]string{"127.0.0.1"}, nil, true}} {
		narrowed := (&SSHAgent{Hosts: mustPolicy(t, c.server...)}).Narrowed(mustPolicy(t, c.profile...))
		if got := narrowed.allows("127.0.0.1"); got != c.want {
			t.Errorf("server %v, profile %v: allows 127.0.0.1 %v, want %v", c.server, c.profile, got, c.want)
		}
	}
	only := newSSHAgentRig(t, []string{"localhost"})
	if _, code := connectVia(t, only.proxy, only.sshAddr); code != http.StatusOK {
		t.Fatal("CONNECT refused")
	}
	if err := bind(only.agentClient(t), only.hostKey, []byte("sid"), false); err == nil {
		t.Fatal("a binding to 127.0.0.1, which --ssh-agent-hosts does not name, was accepted")
	}
}

func mustPolicy(t *testing.T, patterns ...string) Policy {
	t.Helper()
	p, err := ParsePolicy(patterns)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Without an ssh-agent the proxy refuses the agent's address, naming the
// flag; with one whose socket is gone it says so.
func TestSSHAgentAbsentOrDown(t *testing.T) {
	_, proxy := startProxy(t, []string{"example.org"}, 0, nil)
	if _, code := connectVia(t, strings.TrimPrefix(proxy, "http://"), wire.SSHAgentAuthority); code != http.StatusForbidden {
		t.Fatalf("the agent's address without --ssh-agent: %d", code)
	}
	s := NewSession(Config{SSHAgent: &SSHAgent{Dial: func() (net.Conn, error) { return nil, errors.New("no socket") }}}, "t")
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	go s.Serve(ln)
	if _, code := connectVia(t, ln.Addr().String(), wire.SSHAgentAuthority); code != http.StatusBadGateway {
		t.Fatalf("the agent's address with its socket gone: %d", code)
	}
}

// --ssh-agent opens port 22 of the patterns that name no port, and no more.
func TestWithSSHPort(t *testing.T) {
	p := WithSSHPort(mustPolicy(t, "example.org", "*.example.net", "10.0.0.5:2222"))
	for hp, want := range map[string]bool{"example.org:22": true, "a.example.net:22": true, "example.org:443": true,
		"10.0.0.5:22": false, "10.0.0.5:2222": true, "other.org:22": false} {
		host, port, _ := net.SplitHostPort(hp)
		var n int
		fmt.Sscan(port, &n)
		if _, ok := p.Match(host, n); ok != want {
			t.Errorf("%s: allowed %v, want %v", hp, ok, want)
		}
	}
	if r, _ := p.Match("example.org", 22); r.Explicit() {
		t.Error("port 22 made example.org explicit, which would reach private addresses")
	}
}
