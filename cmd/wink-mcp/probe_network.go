package main

import (
	"fmt"
	"io"
	"net"

	"github.com/wink-mcp/wink-mcp/engine/kubernetes"
)

// runProbeNetwork tries a TCP connect to the address args name, within
// kubernetes.ProbeDialTimeout: the Kubernetes engine's probe Pod runs it
// under the workspaces' deny-all NetworkPolicy, so connecting means the
// cluster does not enforce it. It exits kubernetes.ProbeConnected or
// kubernetes.ProbeBlocked.
func runProbeNetwork(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: wink-mcp "+kubernetes.ProbeCommand+" HOST:PORT")
		return 2
	}
	conn, err := net.DialTimeout("tcp", args[0], kubernetes.ProbeDialTimeout)
	if err != nil {
		fmt.Fprintf(stdout, "blocked: %v\n", err)
		return kubernetes.ProbeBlocked
	}
	conn.Close()
	fmt.Fprintf(stdout, "connected to %s\n", args[0])
	return kubernetes.ProbeConnected
}
