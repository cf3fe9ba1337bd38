package workspace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/wink-mcp/wink-mcp/hostcdi"
	"github.com/wink-mcp/wink-mcp/profiles"
	"github.com/wink-mcp/wink-mcp/wire"
)

// ErrDeviceMissing is wrapped by the error of a container that lacks a
// device node its CDI devices' specs name.
var ErrDeviceMissing = errors.New("a CDI device is missing from the container")

// cdiDeviceNodes finds each CDI device of the server (--cdi-device) and
// of its profiles (cdi_devices) in this machine's CDI specs
// (hostcdi.Dirs) and returns the device nodes each names, by device.
func cdiDeviceNodes(server []string, f *profiles.File) (map[string][]string, error) {
	nodes := map[string][]string{}
	find := func(names []string, what string) error {
		if len(names) == 0 {
			return nil
		}
		devices, err := hostcdi.Resolve(hostcdi.Dirs, names)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		for _, d := range devices {
			nodes[d.Name] = d.Nodes
		}
		return nil
	}
	if err := find(server, "--cdi-device"); err != nil {
		return nil, err
	}
	for _, p := range f.All() {
		if err := find(p.CDIDevices, fmt.Sprintf("profile %q (%s:%d): cdi_devices", p.Name, p.File, p.Line)); err != nil {
			return nil, err
		}
	}
	return nodes, nil
}

// sessionDevices are the CDI devices of a session under p: the server's
// and p's, each once.
func sessionDevices(server []string, p *profiles.Profile) []string {
	if p == nil || len(p.CDIDevices) == 0 {
		return server
	}
	out := slices.Clone(server)
	for _, d := range p.CDIDevices {
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// deviceNodesOf are the device nodes of devices, as nodes found them.
func deviceNodesOf(nodes map[string][]string, devices []string) []string {
	var out []string
	for _, d := range devices {
		out = append(out, nodes[d]...)
	}
	return out
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
