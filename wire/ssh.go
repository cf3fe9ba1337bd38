package wire

// SSH through the agent (the server's --ssh-agent): the container's
// SSH_AUTH_SOCK names SSHAgentSocket, where the agent listens; it carries
// each connection made there through the egress proxy as a CONNECT to
// SSHAgentAuthority, a name no DNS answers, which the server's proxy
// serves itself with a filtering agent in front of the server's own
// ssh-agent. The keys stay on the server's side.
const (
	SSHAgentSocket    = "/tmp/.wink-ssh/agent.sock"
	SSHAgentAuthority = "ssh-agent.wink-mcp.invalid:22"
	// SSHProxyCommand is the ssh_config ProxyCommand the containers get:
	// the agent binary opens a CONNECT to %h:%p through the proxy.
	SSHProxyCommand = "ssh-connect"
)
