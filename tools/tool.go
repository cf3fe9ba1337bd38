// Package tools defines wink-mcp's MCP tools. Each tool is a params struct,
// a result struct and a handler: the params struct is the input schema and
// the strict decoder (package schema), the result struct is the output
// schema and the structured content, and its Text method is the rendering
// for clients that only show text. A handler reaches the session's sandbox
// through the small interface its tool needs (FileReader, Commands,
// Checkpointer, ...), defined next to the tool, and never sees Podman.
package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/invopop/jsonschema"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/schema"
	"github.com/wink-mcp/wink-mcp/wspath"
)

// WorkspaceFor returns the workspace of the MCP session a call belongs to.
// Each tool takes of it only the interface it needs, from the workspace
// itself or, when the workspace is a Composite, from the first of its parts
// that implements it; a tool whose interface no part has answers with a
// tool error, not a panic.
type WorkspaceFor func(ctx context.Context) (any, error)

// Composite is a workspace made of parts (its files, its jobs, its
// checkpoints...), each implementing some of the tools' interfaces.
type Composite interface {
	// Parts returns the parts, in the order a tool looks for its
	// interface among them.
	Parts() []any
}

// PartOf returns what of ws implements W: ws itself, or the first of its
// parts that does (Composite); ok is false when none does.
func PartOf[W any](ws any) (W, bool) {
	if w, ok := ws.(W); ok {
		return w, true
	}
	if c, ok := ws.(Composite); ok {
		for _, p := range c.Parts() {
			if w, ok := p.(W); ok {
				return w, true
			}
		}
	}
	var zero W
	return zero, false
}

// Result is a tool's structured result.
type Result interface {
	// Text renders the result for a model that reads only text content.
	Text() string
}

// definition describes one tool whose handler takes W of the session's
// workspace; build turns it into an mcp-go tool.
type definition[W any, P any, R Result] struct {
	name        string
	title       string
	description string
	annotations mcp.ToolAnnotation
	// adjust, if set, changes the input schema for limits the
	// configuration sets.
	adjust func(*jsonschema.Schema)
	// tasks lets a client call the tool as an MCP task.
	tasks bool
	// take, if set, takes W from the session's workspace, for a W made
	// of interfaces that different parts of it implement, and names those
	// none implements; by default W is one interface, taken by PartOf.
	take func(ws any) (w W, missing []reflect.Type)
	// screen, if set, sees the raw arguments before the schema's checks,
	// for a refusal clearer than theirs.
	screen func(raw json.RawMessage) error
	// handle runs the call in the session's workspace.
	handle func(ctx context.Context, ws W, p P) (R, error)
}

// build generates the tool's schemas from P and R and wraps its handler:
// arguments are decoded strictly, the session's workspace is looked up,
// failures become tool errors (isError) with a message the model can act on,
// and results carry both structured content and text.
func build[W any, P any, R Result](workspaceFor WorkspaceFor, d definition[W, P, R]) (server.ServerTool, error) {
	var adjust []func(*jsonschema.Schema)
	if d.adjust != nil {
		adjust = append(adjust, d.adjust)
	}
	dec, err := schema.NewDecoder[P](adjust...)
	if err != nil {
		return server.ServerTool{}, fmt.Errorf("input schema of %s: %w", d.name, err)
	}
	out, err := schema.For[R]()
	if err != nil {
		return server.ServerTool{}, fmt.Errorf("output schema of %s: %w", d.name, err)
	}
	// NewTool would also set a default InputSchema, which mcp-go refuses to
	// marshal next to a raw one: tools/list would fail.
	tool := mcp.NewToolWithRawSchema(d.name, d.description, dec.Schema())
	tool.Title = d.title
	tool.Icons = toolIcon(d.name)
	tool.RawOutputSchema = out
	tool.Annotations = d.annotations
	tool.Annotations.Title = d.title
	if d.tasks {
		tool.Execution = &mcp.ToolExecution{TaskSupport: mcp.TaskSupportOptional}
	}
	take := d.take
	if take == nil {
		take = func(ws any) (W, []reflect.Type) {
			var missing []reflect.Type
			w := takePart[W](ws, &missing)
			return w, missing
		}
	}
	handler := func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		raw, err := rawArguments(req)
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		if d.screen != nil {
			if err := d.screen(raw); err != nil {
				return mcp.NewToolResultError(err.Error()), nil
			}
		}
		p, err := dec.Decode(raw)
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		ws, err := workspaceFor(ctx)
		if err != nil {
			return mcp.NewToolResultError(errorMessage(err)), nil
		}
		w, missing := take(ws)
		if len(missing) > 0 {
			return mcp.NewToolResultError(lacking(d.name, ws, missing)), nil
		}
		ctx = withProgress(ctx, req)
		if c, ok := PartOf[creationFollower](ws); ok {
			defer c.FollowCreation(ctx)() // the container may be waiting its turn
		}
		r, err := d.handle(ctx, w, p)
		if err != nil {
			return mcp.NewToolResultError(errorMessage(err)), nil
		}
		res := mcp.NewToolResultStructured(r, r.Text())
		addLinks(res, r)
		return res, nil
	}
	return server.ServerTool{Tool: tool, Handler: handler}, nil
}

func rawArguments(req mcp.CallToolRequest) (json.RawMessage, error) {
	switch a := req.GetRawArguments().(type) {
	case json.RawMessage:
		return a, nil
	case nil:
		return nil, nil
	default:
		b, err := json.Marshal(a)
		if err != nil {
			return nil, fmt.Errorf("arguments are not JSON: %w", err)
		}
		return b, nil
	}
}

// takePart returns what of ws implements I (PartOf), adding I to missing
// when nothing does.
func takePart[I any](ws any, missing *[]reflect.Type) I {
	w, ok := PartOf[I](ws)
	if !ok {
		*missing = append(*missing, reflect.TypeFor[I]())
	}
	return w
}

// lacking is the message of a call whose session's workspace lacks the
// interfaces its tool needs: a server that wires the tools wrongly, which
// the server's own build-time check should have caught.
func lacking(tool string, ws any, need []reflect.Type) string {
	names := make([]string, len(need))
	for i, t := range need {
		names[i] = t.String()
	}
	return fmt.Sprintf("%s cannot run: this server's workspace (%T) lacks the methods of %s that the tool needs; "+
		"this is a bug in wink-mcp, please report it", tool, ws, strings.Join(names, ", "))
}

// errorMessage is what the model reads when a call fails.
func errorMessage(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "the call was cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "the call ran out of time: " + err.Error()
	}
	return err.Error()
}

func boolPtr(b bool) *bool { return &b }

// annotate states every behaviour hint explicitly; none is left to a
// client's default.
func annotate(readOnly, destructive, idempotent bool) mcp.ToolAnnotation {
	return mcp.ToolAnnotation{
		ReadOnlyHint:    boolPtr(readOnly),
		DestructiveHint: boolPtr(destructive),
		IdempotentHint:  boolPtr(idempotent),
		OpenWorldHint:   boolPtr(false),
	}
}

// cleanPath normalises one path argument, naming the field in its error.
// allowRoot says whether "" (the workspace root) is acceptable.
func cleanPath(field, p string, allowRoot bool) (string, error) {
	c, err := wspath.Clean(p)
	if err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	if c == "" && !allowRoot {
		return "", fmt.Errorf("%s: must name a file, not the workspace root", field)
	}
	return c, nil
}

// shown is a workspace path as a message shows it.
func shown(p string) string {
	if p == "" {
		return "."
	}
	return p
}
