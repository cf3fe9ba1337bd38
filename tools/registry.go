package tools

import (
	"log/slog"

	"github.com/mark3labs/mcp-go/server"
)

// All returns every tool, in the order clients list them.
func All(workspaceFor WorkspaceFor, log *slog.Logger) ([]server.ServerTool, error) {
	constructors := []func() (server.ServerTool, error){
		func() (server.ServerTool, error) { return Ls(workspaceFor) },
		func() (server.ServerTool, error) { return ReadFile(workspaceFor) },
		func() (server.ServerTool, error) { return WriteFile(workspaceFor) },
		func() (server.ServerTool, error) { return EditFile(workspaceFor) },
		func() (server.ServerTool, error) { return Glob(workspaceFor) },
		func() (server.ServerTool, error) { return Grep(workspaceFor) },
		func() (server.ServerTool, error) { return Rm(workspaceFor) },
		func() (server.ServerTool, error) { return Shell(workspaceFor, log) },
		func() (server.ServerTool, error) { return Python(workspaceFor) },
		func() (server.ServerTool, error) { return WorkspaceChanges(workspaceFor) },
		func() (server.ServerTool, error) { return WorkspaceDiff(workspaceFor) },
		func() (server.ServerTool, error) { return WorkspacePort(workspaceFor) },
	}
	out := make([]server.ServerTool, 0, len(constructors))
	for _, c := range constructors {
		t, err := c()
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}
