package doctor

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"
)

// sshAgentDialTimeout bounds reaching the server's ssh-agent.
const sshAgentDialTimeout = 5 * time.Second

// sshAgent checks --ssh-agent: the server's agent answers and holds keys,
// and the known_hosts the sessions trust reads and names hosts.
func (d *doctor) sshAgent(context.Context) Result {
	a := d.cfg.SSHAgent
	if a == nil {
		return Result{Status: OK, Detail: "off: the sessions have no SSH_AUTH_SOCK (--ssh-agent)"}
	}
	c, err := net.DialTimeout("unix", a.Socket, sshAgentDialTimeout)
	if err != nil {
		return Result{Status: Fail, Detail: "the ssh-agent at SSH_AUTH_SOCK " + a.Socket + " does not answer: " + err.Error(),
			Fix: "start wink-mcp where an ssh-agent runs (eval $(ssh-agent); ssh-add KEY), or point SSH_AUTH_SOCK at its socket"}
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(sshAgentDialTimeout))
	keys, err := agent.NewClient(c).List()
	if err != nil {
		return Result{Status: Fail, Detail: "the ssh-agent at " + a.Socket + " does not list its keys: " + err.Error(), Fix: "restart the ssh-agent"}
	}
	data, err := os.ReadFile(a.KnownHosts)
	if err != nil {
		return Result{Status: Fail, Detail: "--ssh-known-hosts: " + err.Error(), Fix: "give a known_hosts file the server's user can read"}
	}
	if _, err := knownhosts.New(a.KnownHosts); err != nil {
		return Result{Status: Fail, Detail: "--ssh-known-hosts " + a.KnownHosts + ": " + err.Error(), Fix: "mend or remove the line the error names"}
	}
	entries := 0
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			entries++
		}
	}
	hosts := "every host a session may reach"
	if len(a.Hosts) > 0 {
		hosts = strings.Join(a.Hosts, ", ")
	}
	r := Result{Status: OK, Detail: fmt.Sprintf("the ssh-agent at %s holds %d keys, lent for %s; --ssh-known-hosts %s: %d entries, readable",
		a.Socket, len(keys), hosts, a.KnownHosts, entries)}
	switch {
	case len(keys) == 0:
		r.Status, r.Fix = Warn, "add a key to the ssh-agent (ssh-add KEY): the sessions can sign nothing"
	case entries == 0:
		r.Status, r.Fix = Warn, "add the hosts' keys to the known_hosts (ssh-keyscan HOST, after checking them): the sessions' ssh trusts no host"
	}
	return r
}
