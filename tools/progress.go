package tools

import (
	"context"
	"fmt"
	"sync"

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
	var (
		mu   sync.Mutex
		last float64 // progress must increase: a wait for the container, then the command, each count from 0
	)
	report := func(p workspace.Progress) {
		message := p.Line
		if message == "" {
			message = fmt.Sprintf("running for %d s, no output yet", p.ElapsedMillis/1000)
		}
		mu.Lock()
		progress := max(float64(p.ElapsedMillis)/1000, last+0.001)
		last = progress
		mu.Unlock()
		// Best effort: a client that does not keep up just misses reports.
		_ = srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
			"progressToken": token,
			"progress":      progress,
			"message":       message,
		})
	}
	return workspace.WithWaitReport(context.WithValue(ctx, progressKey{}, report), report)
}

// creationFollower is the part of a workspace that tells a call waiting
// for its container how the making of it stands (see
// workspace.WithWaitReport).
type creationFollower interface {
	FollowCreation(ctx context.Context) (stop func())
}

// progressFrom returns the call's progress reporter, or nil.
func progressFrom(ctx context.Context) func(workspace.Progress) {
	report, _ := ctx.Value(progressKey{}).(func(workspace.Progress))
	return report
}
