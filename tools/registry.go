package tools

import (
	"log/slog"

	"github.com/mark3labs/mcp-go/server"
)

// All returns every tool, in the order clients list them.
func All(workspaceFor WorkspaceFor, log *slog.Logger) ([]server.ServerTool, error) {
	constructors := []func(WorkspaceFor, *slog.Logger) (server.ServerTool, error){
		Shell,
	}
	out := make([]server.ServerTool, 0, len(constructors))
	for _, c := range constructors {
		t, err := c(workspaceFor, log)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}
