package tools

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/workspace"
)

// progressKey carries a call's progress reporter in its context.
type progressKey struct{}

// withProgress gives ctx a reporter that sends notifications/progress when
// the request carries a progress token. Clients abort calls that are silent
// for too long (about 60 s); the agent reports every 2 s.
func withProgress(ctx context.Context, req mcp.CallToolRequest) context.Context {
	if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
		return ctx
	}
	srv := mcpserver.ServerFromContext(ctx)
	if srv == nil {
		return ctx
	}
	token := req.Params.Meta.ProgressToken
	report := func(p workspace.Progress) {
		message := p.Line
		if message == "" {
			message = fmt.Sprintf("running for %d s, no output yet", p.ElapsedMillis/1000)
		}
		// Best effort: a client that does not keep up just misses reports.
		_ = srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
			"progressToken": token,
			"progress":      float64(p.ElapsedMillis) / 1000,
			"message":       message,
		})
	}
	return context.WithValue(ctx, progressKey{}, report)
}

// progressFrom returns the call's progress reporter, or nil.
func progressFrom(ctx context.Context) func(workspace.Progress) {
	report, _ := ctx.Value(progressKey{}).(func(workspace.Progress))
	return report
}
