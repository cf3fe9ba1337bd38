//go:build !linux

package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
)

// The container roles (agent, relay, supervise, ssh-connect) run inside the Linux
// workspace containers, never on a server built for another system.

func runAgent(_ []string, stderr io.Writer) int { return notHere("agent", stderr) }

func runRelay(_ []string, stderr io.Writer) int { return notHere("relay", stderr) }

func runSupervise([]string) int { return notHere("supervise", os.Stderr) }

func runSSHConnect(_ []string, _ io.Reader, _, stderr io.Writer) int {
	return notHere("ssh-connect", stderr)
}

func notHere(role string, stderr io.Writer) int {
	fmt.Fprintf(stderr, "wink-mcp %s: this role runs only inside a Linux workspace container, and this is a %s/%s build\n",
		role, runtime.GOOS, runtime.GOARCH)
	return 2
}
