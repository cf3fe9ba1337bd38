package egress

import (
	"io"
	"net/http"
	"time"

	"golang.org/x/crypto/ssh/agent"

	"github.com/wink-mcp/wink-mcp/wire"
)

// SSHPort is the port --ssh-agent adds to every allowed pattern that names
// none.
const SSHPort = 22

// WithSSHPort returns p with SSHPort added to each rule that names no port,
// so ssh reaches the hosts the session may reach; a rule that names its
// ports keeps them (and reaches ssh on one of them already).
func WithSSHPort(p Policy) Policy {
	out := Policy{rules: make([]Rule, len(p.rules))}
	for i, r := range p.rules {
		if !r.PortGiven && !contains(r.Ports, SSHPort) {
			r.Ports = append(append([]int(nil), r.Ports...), SSHPort)
		}
		out.rules[i] = r
	}
	return out
}

// serveSSHAgent answers a CONNECT to wire.SSHAgentAuthority, the
// container's SSH_AUTH_SOCK carried by the agent: it serves the filtering
// agent (see SSHAgent) in front of a connection to the server's ssh-agent,
// or refuses when the session has none.
func (s *Session) serveSSHAgent(w http.ResponseWriter, start time.Time) {
	cfg := s.cfg.SSHAgent
	if cfg == nil {
		s.refuse(w, &refusal{status: http.StatusForbidden, host: wire.SSHAgentAuthority, reason: "this session has no ssh-agent",
			remedy: "Ask the user to start wink-mcp with --ssh-agent if ssh keys are needed."}, start)
		return
	}
	up, err := cfg.Dial()
	if err != nil {
		s.refuse(w, &refusal{status: http.StatusBadGateway, host: wire.SSHAgentAuthority, reason: "the server's ssh-agent does not answer: " + err.Error(),
			remedy: "Ask the user to check the server's SSH_AUTH_SOCK (wink-mcp doctor has an ssh-agent line)."}, start)
		return
	}
	defer up.Close()
	down, buffered, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer down.Close()
	if _, err := io.WriteString(down, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	filter := &sshAgentFilter{cfg: cfg, up: agent.NewClient(up), seen: &s.sshSeen, log: s.cfg.Log.With("session", s.sessionID())}
	_ = agent.ServeAgent(filter, &prefixedConn{Conn: down, r: buffered.Reader})
}
