package tools

import (
	"context"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/workspace"
)

// WorkspaceHandoffParams are workspace_handoff's arguments.
type WorkspaceHandoffParams struct {
	ExpiresInSeconds int `json:"expires_in_seconds,omitempty" jsonschema:"minimum=1,maximum=86400,default=900" jsonschema_description:"How long the handle works, in seconds (default 900: 15 minutes)."`
}

// WorkspaceHandoffResult is workspace_handoff's result.
type WorkspaceHandoffResult struct {
	Handle        string    `json:"handle" jsonschema_description:"The one-time handle another session passes to workspace_attach. Treat it as a secret: it is the workspace."`
	Expires       time.Time `json:"expires" jsonschema_description:"When the handle stops working (UTC)."`
	KeptContainer bool      `json:"kept_container" jsonschema_description:"True when the container and its background jobs go with the workspace; false when its files (and checkpoints) do and the next owner gets a new container."`
	Workspace     string    `json:"workspace,omitempty" jsonschema_description:"The kept workspace the files went to, for another process to attach."`
}

// Text gives the handle and what happens next.
func (r WorkspaceHandoffResult) Text() string {
	what := "its files, checkpoints and the changes to its mounted folders; the container was stopped, and the next owner gets a new one"
	if r.KeptContainer {
		what = "its container, background jobs, files and checkpoints"
	}
	return fmt.Sprintf("handle %s\nThe workspace (%s) waits for workspace_attach with this handle until %s; it works once. "+
		"This session now has a fresh, empty workspace.", r.Handle, what, r.Expires.Format(time.RFC3339))
}

// handleTTL is how long a one-time handle works: expires_in_seconds, or
// workspace.DefaultHandoffTTL when it is not given.
func handleTTL(expiresInSeconds int) time.Duration {
	if expiresInSeconds > 0 {
		return time.Duration(expiresInSeconds) * time.Second
	}
	return workspace.DefaultHandoffTTL
}

// Handoffs is what workspace_handoff and workspace_attach take of a
// session's workspace.
type Handoffs interface {
	// Handoff gives the workspace a one-time handle that works for ttl,
	// and goes on with a fresh, empty workspace.
	Handoff(ctx context.Context, ttl time.Duration) (workspace.Handoff, error)
	// Attach takes over the workspace a handle names.
	Attach(ctx context.Context, handle string) (workspace.Attached, error)
}

// WorkspaceHandoff returns the workspace_handoff tool.
func WorkspaceHandoff(workspaceFor WorkspaceFor) (server.ServerTool, error) {
	return build(workspaceFor, definition[Handoffs, WorkspaceHandoffParams, WorkspaceHandoffResult]{
		name:  "workspace_handoff",
		title: "Hand this workspace to another session",
		description: "Give this session's workspace (its files, the changes to mounted folders, its checkpoints, and, where the " +
			"other session is served by the same server, its running container, jobs and open ports) a one-time handle that " +
			"another session of the same client passes to workspace_attach; this session goes on with a fresh, empty workspace. " +
			"The handle works once, until it expires (default 15 minutes); a workspace not attached by then is removed if it kept " +
			"its container, and otherwise stays on disk as a kept workspace the user can list and remove (wink-mcp workspaces).",
		annotations: annotate(false, true, false),
		handle: func(ctx context.Context, ws Handoffs, p WorkspaceHandoffParams) (WorkspaceHandoffResult, error) {
			h, err := ws.Handoff(ctx, handleTTL(p.ExpiresInSeconds))
			return WorkspaceHandoffResult{Handle: h.Handle, Expires: h.Expires, KeptContainer: h.KeptContainer, Workspace: h.Workspace}, err
		},
	})
}

// WorkspaceAttachParams are workspace_attach's arguments.
type WorkspaceAttachParams struct {
	Handle string `json:"handle" jsonschema:"maxLength=200" jsonschema_description:"The handle workspace_handoff gave."`
}

// WorkspaceAttachResult is workspace_attach's result.
type WorkspaceAttachResult struct {
	KeptContainer bool        `json:"kept_container" jsonschema_description:"True when the container and background jobs of the session that handed it over came along."`
	Workspace     string      `json:"workspace,omitempty" jsonschema_description:"The kept workspace this session now owns, when the files came from disk."`
	Mounts        []MountView `json:"mounts" jsonschema_description:"The host folders in the workspace."`
}

// Text says what came along.
func (r WorkspaceAttachResult) Text() string {
	if r.KeptContainer {
		return "attached: this session now owns the workspace, with its running container and background jobs (the job tool lists them)"
	}
	return "attached: this session now owns the workspace " + r.Workspace + " with its files and checkpoints; its container is made on the next call"
}

// WorkspaceAttach returns the workspace_attach tool.
func WorkspaceAttach(workspaceFor WorkspaceFor) (server.ServerTool, error) {
	return build(workspaceFor, definition[Handoffs, WorkspaceAttachParams, WorkspaceAttachResult]{
		name:  "workspace_attach",
		title: "Take over a workspace another session handed over",
		description: "Take over the workspace another session of the same client handed over with workspace_handoff, by its " +
			"handle: this session's own workspace, which must hold no work yet, is replaced by it, with the running container, " +
			"jobs and open ports it kept (kept_container). A wrong, used or expired handle is refused.",
		annotations: annotate(false, true, false),
		handle: func(ctx context.Context, ws Handoffs, p WorkspaceAttachParams) (WorkspaceAttachResult, error) {
			a, err := ws.Attach(ctx, p.Handle)
			return WorkspaceAttachResult{KeptContainer: a.KeptContainer, Workspace: a.Workspace, Mounts: mountViews(a.Info.Mounts)}, err
		},
	})
}
