package main

import (
	"fmt"
	"io"

	"github.com/wink-mcp/wink-mcp/workspace/forkcopy"
)

// runForkCopy copies a workspace's directory for a fork (forkcopy.Tree):
// the server runs it in rootless Podman's user namespace, where the copy
// keeps the container users' owners.
func runForkCopy(args []string, stderr io.Writer) int {
	if len(args) != 2 {
		fmt.Fprintf(stderr, "usage: wink-mcp %s SRC DST (internal: the server runs it)\n", forkcopy.Command)
		return 2
	}
	if err := forkcopy.Tree(args[0], args[1]); err != nil {
		fmt.Fprintf(stderr, "wink-mcp %s: %v\n", forkcopy.Command, err)
		return 1
	}
	return 0
}
