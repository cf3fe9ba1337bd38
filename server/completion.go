package server

import (
	"context"
	"path"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/wire"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// maxCompletions is the most values one completion gives (MCP's cap).
const maxCompletions = 100

// pathCompleter completes the path of the files resource template from the
// session's /workspace: the entries of the directory the value names so
// far whose names start with its last part, directories ending in "/".
type pathCompleter struct{ s *Server }

// CompleteResourceArgument implements mcpserver.ResourceCompletionProvider.
// A value that breaks the path rules, or a directory that does not exist,
// completes to nothing rather than an error: the user is still typing.
func (c pathCompleter) CompleteResourceArgument(ctx context.Context, uri string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	none := &mcp.Completion{Values: []string{}}
	if uri != FilesURITemplate || arg.Name != "path" || len(arg.Value) > workspace.MaxPathLength {
		return none, nil
	}
	dir, prefix := path.Split(arg.Value)
	clean, err := workspace.CleanPath(strings.TrimSuffix(dir, "/"))
	if err != nil {
		return none, nil
	}
	ws, err := c.s.sessionWorkspace(ctx)
	if err != nil {
		return nil, err
	}
	list, err := ws.List(ctx, clean)
	if err != nil {
		return none, nil
	}
	out := &mcp.Completion{Values: []string{}}
	for _, e := range list.Entries {
		if !strings.HasPrefix(e.Name, prefix) {
			continue
		}
		out.Total++
		if len(out.Values) == maxCompletions {
			out.HasMore = true
			continue
		}
		value := dir + e.Name
		if e.Kind == wire.KindDirectory {
			value += "/"
		}
		out.Values = append(out.Values, value)
	}
	out.HasMore = out.HasMore || list.Truncated
	return out, nil
}
