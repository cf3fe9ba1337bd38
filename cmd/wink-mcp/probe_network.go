package main

import (
	"fmt"
	"io"
	"net"
	"time"

	"github.com/wink-mcp/wink-mcp/engine/kubernetes"
)

// runProbeNetwork tries TCP connects to the address args name, each within
// kubernetes.ProbeDialTimeout, every kubernetes.ProbeRetryInterval: the
// Kubernetes engine's probe Pod runs it under the workspaces' deny-all
// NetworkPolicy. Connects that keep failing for kubernetes.ProbeConfirm
// mean the policy holds: it exits kubernetes.ProbeBlocked. A connect that
// gets through once the settle time args give has passed (an enforcer may
// write a new Pod's rules a moment after it starts) means the cluster does
// not enforce the policy: it exits kubernetes.ProbeConnected.
func runProbeNetwork(args []string, stdout, stderr io.Writer) int {
	if len(args) != 2 {
		fmt.Fprintln(stderr, "usage: wink-mcp "+kubernetes.ProbeCommand+" HOST:PORT SETTLE")
		return 2
	}
	settle, err := time.ParseDuration(args[1])
	if err != nil || settle < 0 {
		fmt.Fprintf(stderr, "%s: the settle time %q is no duration such as 10s\n", kubernetes.ProbeCommand, args[1])
		return 2
	}
	begin := time.Now()
	var blockedSince time.Time
	for tries := 1; ; tries++ {
		conn, err := net.DialTimeout("tcp", args[0], kubernetes.ProbeDialTimeout)
		switch {
		case err != nil && blockedSince.IsZero():
			blockedSince = time.Now()
		case err != nil && time.Since(blockedSince) >= kubernetes.ProbeConfirm:
			fmt.Fprintf(stdout, "blocked since %v, %d connects in: %v\n", blockedSince.Sub(begin).Round(time.Millisecond), tries, err)
			return kubernetes.ProbeBlocked
		case err == nil:
			conn.Close()
			blockedSince = time.Time{}
			if time.Since(begin) >= settle {
				fmt.Fprintf(stdout, "connected to %s, %d connects in %v\n", args[0], tries, time.Since(begin).Round(time.Millisecond))
				return kubernetes.ProbeConnected
			}
		}
		time.Sleep(kubernetes.ProbeRetryInterval)
	}
}

// runAwaitCutOff is runProbeNetwork for a workspace Pod's cut-off init
// container, which must succeed for the workspace container to start: it
// exits 0 once a connect fails (the enforcer wrote the Pod's rules), 1
// when the connects got through for the whole settle time, saying so.
func runAwaitCutOff(args []string, stdout, stderr io.Writer) int {
	switch code := runProbeNetwork(args, stdout, stderr); code {
	case kubernetes.ProbeBlocked:
		return 0
	case kubernetes.ProbeConnected:
		fmt.Fprintf(stderr, "this Pod's network is not cut off: it still reaches %s after %s, so the deny-all NetworkPolicy is not enforced for it\n", args[0], args[1])
		return 1
	default:
		return code
	}
}
