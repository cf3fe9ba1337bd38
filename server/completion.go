package server

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/prompts"
	"github.com/wink-mcp/wink-mcp/tools"
	"github.com/wink-mcp/wink-mcp/wire"
	"github.com/wink-mcp/wink-mcp/wspath"
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
// Under MCP 2026-07-28 the template is HandleFilesTemplate, and the
// completion's context names the workspace by its reference (the
// template's workspace argument), which must be one of the principal's
// handles, as for reading it.
func (c pathCompleter) CompleteResourceArgument(ctx context.Context, uri string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	none := &mcp.Completion{Values: []string{}}
	if uri == HandleFilesTemplate && mcpserver.IsModernRequest(ctx) {
		ref := cc.Arguments["workspace"]
		if !validRef(ref) {
			return nil, fmt.Errorf("context.arguments.workspace: give the reference workspace_open returned (%s...) to complete a path of %s", refPrefix, HandleFilesTemplate)
		}
		bound, end, err := c.s.views.inWorkspace(ctx, ref)
		if err != nil {
			return nil, err
		}
		defer end()
		ctx, uri = bound, FilesURITemplate
	}
	if uri != FilesURITemplate || arg.Name != "path" || len(arg.Value) > wspath.MaxLength {
		return none, nil
	}
	dir, _ := path.Split(arg.Value)
	clean, err := wspath.Clean(strings.TrimSuffix(dir, "/"))
	if err != nil {
		return none, nil
	}
	files, err := requestPart[tools.FileReader](ctx, c.s)
	if err != nil {
		return nil, err
	}
	list, err := files.List(ctx, clean)
	if err != nil {
		return none, nil
	}
	values := make([]string, 0, len(list.Entries))
	for _, e := range list.Entries {
		value := dir + e.Name
		if e.Kind == wire.KindDirectory {
			value += "/"
		}
		values = append(values, value)
	}
	return completion(values, arg.Value, list.Truncated), nil
}

// profileCompleter completes the workspace prompt's profile argument with
// the names of the profiles.
type profileCompleter struct{ names []string }

// CompletePromptArgument implements mcpserver.PromptCompletionProvider.
func (c profileCompleter) CompletePromptArgument(_ context.Context, prompt string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	if prompt != prompts.Name || arg.Name != prompts.ProfileArgument {
		return &mcp.Completion{Values: []string{}}, nil
	}
	return completion(c.names, arg.Value, false), nil
}

// completion is the values that start with typed, at most maxCompletions
// of them, with their total; more says values were left out before this.
func completion(values []string, typed string, more bool) *mcp.Completion {
	out := &mcp.Completion{Values: []string{}, HasMore: more}
	for _, v := range values {
		if !strings.HasPrefix(v, typed) {
			continue
		}
		out.Total++
		if len(out.Values) == maxCompletions {
			out.HasMore = true
			continue
		}
		out.Values = append(out.Values, v)
	}
	return out
}
