package server

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/server/mcpgoadapt"
)

// prestart begins making a session's container as soon as its client
// confirms the session (notifications/initialized), so that the model's
// first call, which comes only after it has written one, finds the
// container ready. A session ending first removes what was made.
//
// A session that mounts its client's roots over HTTP or SSE waits for its
// first call instead: asking for the roots needs a stream the client opens
// only with a request, and the creation would wait for it.
func (s *Server) prestart(ctx context.Context, _ mcp.JSONRPCNotification) {
	session := mcpserver.ClientSessionFromContext(ctx)
	if s.cfg.Workspace.MountRoots && !mcpgoadapt.IsStdio(session) {
		return
	}
	ws, err := s.sessionWorkspace(ctx)
	if err != nil {
		return
	}
	ws.Prestart(ctx)
}
