package tools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/workspace"
)

// WorkspaceForkParams are workspace_fork's arguments.
type WorkspaceForkParams struct {
	Count            int    `json:"count" jsonschema:"minimum=1,maximum=16" jsonschema_description:"How many forks to make, 1 to 16."`
	Checkpoint       string `json:"checkpoint,omitempty" jsonschema:"maxLength=64" jsonschema_description:"A checkpoint ID (c3): each fork starts as that checkpoint saved the workspace, rather than as it is now."`
	ExpiresInSeconds int    `json:"expires_in_seconds,omitempty" jsonschema:"minimum=1,maximum=86400,default=900" jsonschema_description:"How long each fork's handle works, in seconds (default 900: 15 minutes); an unclaimed fork is then deleted."`
}

// WorkspaceForkResult is workspace_fork's result.
type WorkspaceForkResult struct {
	Forks []ForkView `json:"forks" jsonschema_description:"The forks, each with its one-time handle."`
}

// ForkView is one fork.
type ForkView struct {
	Handle    string    `json:"handle" jsonschema_description:"The one-time handle that claims the fork (workspace_attach, or workspace_open's handoff). Treat it as a secret: it is the fork."`
	Expires   time.Time `json:"expires" jsonschema_description:"When the handle stops working and the fork, unclaimed, is deleted (UTC)."`
	Workspace string    `json:"workspace" jsonschema_description:"The kept workspace that holds the fork's files until it is claimed."`
	Bytes     int64     `json:"bytes" jsonschema_description:"What the fork's files and checkpoints take on the server's disk."`
}

// Text lists the handles and what happens next.
func (r WorkspaceForkResult) Text() string {
	var b strings.Builder
	for i, f := range r.Forks {
		fmt.Fprintf(&b, "fork %d: handle %s\n", i+1, f.Handle)
	}
	if len(r.Forks) > 0 {
		fmt.Fprintf(&b, "Each fork has a copy of this workspace's files, mounted folders' changes and checkpoints (not its running processes), and waits for workspace_attach "+
			"(or workspace_open with handoff) with its handle until %s; a handle works once. This workspace is unchanged.", r.Forks[0].Expires.Format(time.RFC3339))
	}
	return b.String()
}

// Forks is what workspace_fork takes of a session's workspace.
type Forks interface {
	// Fork copies the workspace count times, as it is now or as
	// checkpoint saved it, each copy waiting ttl for its handle.
	Fork(ctx context.Context, count int, checkpoint string, ttl time.Duration) ([]workspace.Fork, error)
}

// WorkspaceFork returns the workspace_fork tool.
func WorkspaceFork(workspaceFor WorkspaceFor) (server.ServerTool, error) {
	return build(workspaceFor, definition[Forks, WorkspaceForkParams, WorkspaceForkResult]{
		name:  "workspace_fork",
		title: "Fork this workspace",
		description: "Copy this workspace into count new workspaces (forks), each with its own files, mounted folders' changes and " +
			"checkpoints, as it is now or as a checkpoint saved it; running processes and background jobs are not copied, and this " +
			"workspace is unchanged. Each fork is handed over with a one-time handle, as workspace_handoff does: another session of " +
			"the same client claims it with workspace_attach (or workspace_open's handoff), and gets a new container on its files. " +
			"Use it to try several approaches in parallel from one state and keep the best. An unclaimed fork is deleted when its " +
			"handle expires (default 15 minutes).",
		annotations: annotate(false, false, false),
		handle: func(ctx context.Context, ws Forks, p WorkspaceForkParams) (WorkspaceForkResult, error) {
			forks, err := ws.Fork(ctx, p.Count, p.Checkpoint, handleTTL(p.ExpiresInSeconds))
			if err != nil {
				return WorkspaceForkResult{}, err
			}
			out := WorkspaceForkResult{Forks: make([]ForkView, len(forks))}
			for i, f := range forks {
				out.Forks[i] = ForkView{Handle: f.Handle, Expires: f.Expires, Workspace: f.Workspace, Bytes: f.Bytes}
			}
			return out, nil
		},
	})
}
