package main

import (
	"fmt"
	"io"
	"os"
)

// runInstallAgent copies this binary to the file args name, executable:
// the init container of a Kubernetes workspace Pod runs it from an image
// that holds nothing else, so it cannot count on a cp (engine/kubernetes).
func runInstallAgent(args []string, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: wink-mcp install-agent FILE")
		return 2
	}
	if err := installAgent(args[0]); err != nil {
		fmt.Fprintf(stderr, "wink-mcp install-agent: %v\n", err)
		return 1
	}
	return 0
}

// installAgent copies this binary to dest with mode 0555.
func installAgent(dest string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this binary: %w", err)
	}
	src, err := os.Open(self)
	if err != nil {
		return err
	}
	defer src.Close()
	out, err := os.OpenFile(dest, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o555)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, src); err != nil {
		out.Close()
		return fmt.Errorf("copying to %s: %w", dest, err)
	}
	return out.Close()
}
