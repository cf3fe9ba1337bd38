package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/quota"
	"github.com/wink-mcp/wink-mcp/server/mcpgoadapt"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// Names of the tools that open and close workspace handles, and of the
// argument that carries a handle.
const (
	toolWorkspaceOpen  = "workspace_open"
	toolWorkspaceClose = "workspace_close"
	handleArg          = "workspace"
	// handoffArg is workspace_open's argument naming a handed-over workspace.
	handoffArg = "handoff"
	// handleHeader is the Mcp-Param-* header (without its prefix) a
	// 2026-07-28 client mirrors the handle into, for load balancers.
	handleHeader = "Workspace"
)

// handleArgDescription describes the workspace argument every workspace
// tool takes.
const handleArgDescription = "The workspace handle workspace_open returned. Required for clients of MCP revision 2026-07-28, " +
	"which have no sessions; clients of the 2025 revisions have a workspace of their own and must leave it out."

// handleInstructions ends the instructions server/discover gives: what a
// 2026-07-28 client must do before the workspace the rest describes exists.
const handleInstructions = "\n\nWith MCP revision 2026-07-28 there is no session, so no workspace until you open one: " +
	"call workspace_open first and pass the handle it returns as the `workspace` argument of every other tool; " +
	"call workspace_close when done (an unused workspace also ends after the server's idle timeout)."

// legacyHandleTool answers a 2025 client that calls workspace_open or
// workspace_close, which it is not shown.
const legacyHandleTool = "workspace handles are for clients of MCP revision 2026-07-28; this session (a 2025 revision) has a workspace of its own: use the tools without a handle"

// handleSessionKey carries the manager session of the handle a call named.
type handleSessionKey struct{}

// handleSessionFrom returns the manager session of the handle of ctx's call, "" if none.
func handleSessionFrom(ctx context.Context) string {
	id, _ := ctx.Value(handleSessionKey{}).(string)
	return id
}

// handleTools returns workspace_open and workspace_close.
func (s *Server) handleTools() []mcpserver.ServerTool {
	open := mcp.NewTool(toolWorkspaceOpen,
		mcp.WithDescription("Open a workspace (a fresh Linux container with /workspace) and return its handle, for clients of MCP revision 2026-07-28: "+
			"pass the handle as the `workspace` argument of every other tool. The workspace lives until workspace_close or until it has no calls for the server's idle timeout. "+
			"Clients of the 2025 revisions already have a workspace per session and do not need this."),
		mcp.WithString("profile", mcp.Description("The profile the workspace starts with (see the workspace prompt); the server's default if left out.")),
		mcp.WithString("name", mcp.Description("A kept workspace to open (or make): its files outlive the handle, and so does the handle, on any replica of the server. Left out, the workspace is removed when the handle ends.")),
		mcp.WithString(handoffArg, mcp.MaxLength(200), mcp.Description("A handle workspace_handoff or workspace_fork gave (a session of a 2025 revision, or another handle, of the same client): "+
			"the new handle takes that workspace over, as workspace_attach does. Not with `name`.")),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithOpenWorldHintAnnotation(false),
	)
	closeTool := mcp.NewTool(toolWorkspaceClose,
		mcp.WithDescription("Close a workspace handle from workspace_open: its container is removed (a kept workspace's files stay) and the handle stops working."),
		mcp.WithString(handleArg, mcp.Required(), mcp.Description("The handle workspace_open returned.")),
		mcp.WithDestructiveHintAnnotation(true),
		mcp.WithIdempotentHintAnnotation(false),
		mcp.WithOpenWorldHintAnnotation(false),
	)
	open.Title, open.Annotations.Title = "Open a workspace", "Open a workspace"
	closeTool.Title, closeTool.Annotations.Title = "Close a workspace", "Close a workspace"
	return []mcpserver.ServerTool{{Tool: open, Handler: s.openHandle}, {Tool: closeTool, Handler: s.closeHandle}}
}

// openHandle serves workspace_open.
func (s *Server) openHandle(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if !mcpserver.IsModernRequest(ctx) {
		return mcp.NewToolResultError(legacyHandleTool), nil
	}
	profile, name, handoff := req.GetString("profile", ""), req.GetString("name", ""), req.GetString(handoffArg, "")
	if handoff != "" && name != "" {
		return mcp.NewToolResultError("workspace_open: give `name` (a kept workspace) or `handoff` (a handed-over workspace), not both"), nil
	}
	if profile != "" {
		if _, err := s.mgr.Profiles().Get(profile); err != nil {
			return mcp.NewToolResultError("workspace_open: profile: " + err.Error()), nil
		}
	}
	if name != "" {
		if err := workspace.CheckWorkspaceName(name); err != nil {
			return mcp.NewToolResultError("workspace_open: name: " + err.Error()), nil
		}
	}
	if max := s.cfg.HTTP.MaxSessions; max > 0 && s.handles.count() >= max {
		return mcp.NewToolResultError(fmt.Sprintf("workspace_open: this server keeps at most %d workspace handles open at once (--max-sessions); close one with workspace_close first", max)), nil
	}
	hold, err := s.cfg.Quotas.Reserve(principalFrom(ctx), quota.Amounts{quota.Workspaces: 1})
	if err != nil {
		return mcp.NewToolResultError("workspace_open: " + err.Error()), nil
	}
	handle, session := s.handles.open(principalFrom(ctx), hold)
	s.views.opened(handle, session)
	stdio := mcpgoadapt.IsStdio(mcpserver.ClientSessionFromContext(ctx))
	// A handoff's workspace comes from this server's memory: its handle
	// stays here (docs/protocol.md).
	roaming := ""
	if name == "" && handoff == "" && s.shared.roams {
		roaming = engine.NewRoamingName()
	}
	opts := s.shared.ownOptions(handle, roaming, profile, principalFrom(ctx), stdio)
	if name != "" {
		opts = s.shared.keptOptions(handle, name, profile, principalFrom(ctx), stdio)
	}
	came := ""
	var taken *takenHandoff
	if handoff != "" {
		// Handed over on any replica (a roaming workspace's), else in this process.
		if taken, err = s.shared.takeRoamingHandoff(ctx, handle, handoff); err != nil {
			_, _, _ = s.handles.close(handle, principalFrom(ctx))
			s.views.ended(session)
			return mcp.NewToolResultError("workspace_open: handoff: " + err.Error()), nil
		}
		if taken != nil {
			opts = s.shared.ownOptions(handle, taken.handle.Workspace, taken.handle.Profile, principalFrom(ctx), stdio)
			handoff, came = "", " with the handed-over workspace's running container and background jobs"
		}
	}
	s.mgr.Register(session, opts)
	ws, err := s.mgr.Session(session)
	if err != nil {
		_, _, _ = s.handles.close(handle, principalFrom(ctx))
		s.views.ended(session)
		s.mgr.EndSession(ctx, session)
		s.shared.giveBack(ctx, taken)
		if taken != nil {
			return mcp.NewToolResultError("workspace_open: handoff: " + err.Error() + " (the handoff was given back: it works again, here once this is mended or on another server, until it expires)"), nil
		}
		return mcp.NewToolResultError("workspace_open: " + err.Error()), nil
	}
	if handoff != "" {
		return s.shared.openHandedOver(ctx, handle, session, ws, handoff)
	}
	if !s.cfg.Lazy {
		ws.Prestart(ctx)
	}
	if name != "" || roaming != "" {
		if err := s.shared.record(ctx, handle, principalFrom(ctx), name+roaming, profile, roaming != ""); err != nil {
			_, _, _ = s.handles.close(handle, principalFrom(ctx))
			s.views.ended(session)
			s.mgr.EndSession(ctx, session)
			return mcp.NewToolResultError("workspace_open: " + err.Error()), nil
		}
	}
	s.log.Info("workspace handle opened", "session", s.mgr.SessionHash(session), "profile", profile, "kept", name != "", "roaming", roaming != "" || came != "")
	return openedResult(handle, came), nil
}

// openedResult is workspace_open's answer: the handle, the prefix of its
// resources (see handle_uris.go), and what came along.
func openedResult(handle, came string) *mcp.CallToolResult {
	resources := handleResourcesPrefix + refOf(handle) + "/"
	text := "Workspace opened" + came + "; its files are the resources " + resources + "files/<path>, and its snapshot of touched files " + resources + "snapshot. " +
		"Pass this handle as the `workspace` argument of every tool, and close it with workspace_close when done: " + handle
	return mcp.NewToolResultStructured(map[string]any{handleArg: handle, "resources": resources}, text)
}

// closeHandle serves workspace_close.
func (s *Server) closeHandle(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if !mcpserver.IsModernRequest(ctx) {
		return mcp.NewToolResultError(legacyHandleTool), nil
	}
	handle, err := req.RequireString(handleArg)
	if err != nil {
		return mcp.NewToolResultError("workspace_close: the `workspace` argument (the handle workspace_open returned) is required"), nil
	}
	end, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	session, record, err := s.handles.close(handle, principalFrom(ctx))
	if err != nil {
		// Held by no one here: maybe opened on another server, or before a restart.
		if err := s.shared.closeRecorded(end, handle, principalFrom(ctx)); err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		s.log.Info("workspace handle closed by its record")
		return mcp.NewToolResultText("Workspace closed; its handle no longer works."), nil
	}
	s.views.ended(session)
	s.shared.forget(end, record)
	s.mgr.EndSession(end, session)
	s.log.Info("workspace handle closed", "session", s.mgr.SessionHash(session))
	return mcp.NewToolResultText("Workspace closed; its handle no longer works."), nil
}

// bindHandle resolves the workspace argument of a call: a 2026-07-28 call
// must name a handle of its principal, and runs in that handle's
// workspace; a 2025 call must not name one (its session is its workspace).
// The argument is taken out before the tool decodes its arguments.
func (s *Server) bindHandle(next mcpserver.ToolHandlerFunc) mcpserver.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.Params.Name == toolWorkspaceOpen || req.Params.Name == toolWorkspaceClose {
			return next(ctx, req)
		}
		args, handle, named, err := takeHandleArg(req.GetRawArguments())
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		if !mcpserver.IsModernRequest(ctx) {
			if named {
				return mcp.NewToolResultError("the `workspace` argument is for clients of MCP revision 2026-07-28; " +
					"this session (a 2025 revision) has a workspace of its own: call " + req.Params.Name + " without it"), nil
			}
			return next(ctx, req)
		}
		if !named || handle == "" {
			return mcp.NewToolResultError(req.Params.Name + " needs a workspace: call workspace_open, then pass the handle it returns as the `workspace` argument"), nil
		}
		session, end, err := s.shared.beginHandleCall(ctx, handle)
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		defer end()
		s.views.opened(handle, session) // one adopted from its record gets its resources too
		if audited, ok := ctx.Value(auditSessionKey{}).(*string); ok {
			*audited = s.mgr.SessionHash(session)
		}
		defer s.logs.callLogs(ctx, s.mgr.SessionHash(session))()
		var decoded map[string]any
		_ = json.Unmarshal(args, &decoded) // an object: takeHandleArg made it
		req.Params.Arguments, req.Params.RawArguments = decoded, args
		result, err := next(context.WithValue(ctx, handleSessionKey{}, session), req)
		s.shared.changedByHandoff(ctx, req.Params.Name, handle, session, result)
		return result, err
	}
}

// takeHandleArg takes the workspace argument out of a call's arguments:
// the arguments without it, the handle, and whether it was there. A
// workspace argument that is not a string is an error. Arguments that do
// not mention the name at all, as a 2025 call's never do, are not decoded:
// the request path reads a large payload as few times as it can.
func takeHandleArg(raw any) (rest json.RawMessage, handle string, named bool, err error) {
	var b []byte
	switch a := raw.(type) {
	case nil:
		return nil, "", false, nil
	case json.RawMessage:
		b = a
	case map[string]any:
		if _, ok := a[handleArg]; !ok {
			return nil, "", false, nil
		}
		if b, err = json.Marshal(a); err != nil {
			return nil, "", false, fmt.Errorf("arguments are not JSON: %w", err)
		}
	default:
		if b, err = json.Marshal(a); err != nil {
			return nil, "", false, fmt.Errorf("arguments are not JSON: %w", err)
		}
	}
	if !bytes.Contains(b, []byte(`"`+handleArg+`"`)) {
		return b, "", false, nil
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(b, &fields) != nil {
		return b, "", false, nil // not an object: the tool's decoder says what is wrong
	}
	value, named := fields[handleArg]
	if !named {
		return b, "", false, nil
	}
	if err := json.Unmarshal(value, &handle); err != nil {
		return nil, "", true, fmt.Errorf("the `workspace` argument must be a string: the handle workspace_open returned")
	}
	delete(fields, handleArg)
	rest, err = json.Marshal(fields)
	return rest, handle, true, err
}

// withHandleArg adds the optional workspace argument, mirrored into the
// Mcp-Param-Workspace header, to the input schema of every workspace tool,
// and returns each tool's schema without it, which 2025 clients are shown.
func withHandleArg(tools []mcpserver.ServerTool) (legacySchemas map[string]json.RawMessage, err error) {
	legacySchemas = map[string]json.RawMessage{}
	for i := range tools {
		t := &tools[i].Tool
		var schema map[string]any
		if err := json.Unmarshal(t.RawInputSchema, &schema); err != nil {
			return nil, fmt.Errorf("input schema of %s: %w", t.Name, err)
		}
		props, _ := schema["properties"].(map[string]any)
		if props == nil {
			props = map[string]any{}
		}
		props[handleArg] = map[string]any{"type": "string", "description": handleArgDescription, "x-mcp-header": handleHeader}
		schema["properties"] = props
		modern, err := json.Marshal(schema)
		if err != nil {
			return nil, fmt.Errorf("input schema of %s: %w", t.Name, err)
		}
		legacySchemas[t.Name] = t.RawInputSchema
		t.RawInputSchema = modern
	}
	return legacySchemas, nil
}

// showLegacySchemas shows 2025 clients the tools exactly as before
// handles: without workspace_open and workspace_close, and the input
// schemas without the workspace argument.
func showLegacySchemas(legacy map[string]json.RawMessage) mcpserver.OnAfterListToolsFunc {
	return func(ctx context.Context, _ any, _ *mcp.ListToolsRequest, result *mcp.ListToolsResult) {
		if result == nil || mcpserver.IsModernRequest(ctx) {
			return
		}
		shown := result.Tools[:0:0]
		for _, t := range result.Tools {
			if t.Name == toolWorkspaceOpen || t.Name == toolWorkspaceClose {
				continue
			}
			if schema, ok := legacy[t.Name]; ok {
				t.RawInputSchema = schema
			}
			shown = append(shown, t)
		}
		result.Tools = shown
	}
}
