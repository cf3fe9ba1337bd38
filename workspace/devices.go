package workspace

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/wink-mcp/wink-mcp/hostcdi"
	"github.com/wink-mcp/wink-mcp/wire"
)

// ErrDeviceMissing is wrapped by the error of a container that lacks a
// device node its CDI devices' specs name.
var ErrDeviceMissing = errors.New("a CDI device is missing from the container")

// cdiDeviceNodes finds each of names in this machine's CDI specs
// (hostcdi.Dirs) and returns the device nodes they name.
func cdiDeviceNodes(names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	devices, err := hostcdi.Resolve(hostcdi.Dirs, names)
	if err != nil {
		return nil, fmt.Errorf("--cdi-device: %w", err)
	}
	var nodes []string
	for _, d := range devices {
		nodes = append(nodes, d.Nodes...)
	}
	return nodes, nil
}

// checkDeviceNodes checks, after a container is made, that each of nodes
// is a device node in it (what --cdi-device's specs give), through its
// agent, as its user.
func checkDeviceNodes(ctx context.Context, client *wire.Client, nodes []string) error {
	if len(nodes) == 0 {
		return nil
	}
	script := `for p; do [ -c "$p" ] || [ -b "$p" ] || { echo "$p"; exit 3; }; done`
	var res ExecResult
	err := client.Call(ctx, wire.OpExec, wire.ExecArgs{Argv: append([]string{"sh", "-c", script, "sh"}, nodes...),
		TimeoutMillis: 10_000, Capture: true, OutputLimit: 4096}, &res)
	switch {
	case err != nil:
		return fmt.Errorf("%w: checking the device nodes %v: %v", ErrDeviceMissing, nodes, err)
	case res.ExitCode == 3:
		return fmt.Errorf("%w: %s is not a device node in the container, though its CDI spec names it; "+
			"check the spec with `wink-mcp doctor`", ErrDeviceMissing, strings.TrimSpace(res.Stdout))
	case res.ExitCode != 0:
		return fmt.Errorf("%w: checking the device nodes %v: exit %d: %s (the image needs sh)", ErrDeviceMissing, nodes, res.ExitCode, strings.TrimSpace(res.Stderr))
	}
	return nil
}
