package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/workspace"
)

// workspace_port's actions.
const (
	PortOpen  = "open"
	PortClose = "close"
	PortList  = "list"
)

// WorkspacePortParams are workspace_port's arguments.
type WorkspacePortParams struct {
	Action string `json:"action" jsonschema:"enum=open,enum=close,enum=list" jsonschema_description:"open shows a port of the container on the user's machine; close stops showing it; list names the open ports."`
	Port   int    `json:"port,omitempty" jsonschema:"minimum=1,maximum=65535" jsonschema_description:"The container port (what the server in the workspace listens on, on 127.0.0.1 or 0.0.0.0). Required for open and close."`
}

// Validate requires a port for open and close.
func (p *WorkspacePortParams) Validate() error {
	if p.Action != PortList && p.Port == 0 {
		return fmt.Errorf("port: is required when action is %s (a number from 1 to 65535)", p.Action)
	}
	if p.Action == PortList && p.Port != 0 {
		return fmt.Errorf("port: list takes no port (got %d)", p.Port)
	}
	return nil
}

// PortView is an open port.
type PortView struct {
	Port int    `json:"port" jsonschema_description:"The container port."`
	URL  string `json:"url" jsonschema_description:"Where the user opens it: this machine's loopback, reachable from nowhere else."`
}

// WorkspacePortResult is workspace_port's result.
type WorkspacePortResult struct {
	Action string     `json:"action" jsonschema_description:"The action performed."`
	Port   *PortView  `json:"port,omitempty" jsonschema_description:"The port opened."`
	Ports  []PortView `json:"ports" jsonschema_description:"Every port this session has open, after the action."`
}

// Text names the URL to give the user, then the open ports.
func (r WorkspacePortResult) Text() string {
	var b strings.Builder
	if r.Port != nil {
		fmt.Fprintf(&b, "port %d of the workspace is at %s on the user's machine (loopback only); give the user that URL.", r.Port.Port, r.Port.URL)
	}
	if len(r.Ports) == 0 {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString("no port is open")
		return b.String()
	}
	if b.Len() > 0 {
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "open ports (at most %d):", workspace.MaxPorts)
	for _, p := range r.Ports {
		fmt.Fprintf(&b, "\n%d  %s", p.Port, p.URL)
	}
	return b.String()
}

func portViews(ps []workspace.PortInfo) []PortView {
	out := make([]PortView, 0, len(ps))
	for _, p := range ps {
		out = append(out, PortView{Port: p.Port, URL: p.URL})
	}
	return out
}

// PortPreviews is what workspace_port takes of a session's workspace.
type PortPreviews interface {
	// OpenPort shows a container port on this machine's loopback; it
	// returns the port and all the session's open ports.
	OpenPort(ctx context.Context, port int) (workspace.PortInfo, []workspace.PortInfo, error)
	// ClosePort stops showing a port and returns the ports still open.
	ClosePort(port int) ([]workspace.PortInfo, error)
	// Ports lists the open ports.
	Ports() []workspace.PortInfo
}

// WorkspacePort returns the workspace_port tool.
func WorkspacePort(workspaceFor WorkspaceFor) (server.ServerTool, error) {
	return build(workspaceFor, definition[PortPreviews, WorkspacePortParams, WorkspacePortResult]{
		name:  "workspace_port",
		title: "Show a workspace port to the user",
		description: fmt.Sprintf("Show a server you started in the workspace (a dev server, an API, a notebook) to the user: open returns "+
			"a URL on the user's machine's loopback (http://127.0.0.1:PORT/) that reaches the container's port through the workspace's own "+
			"channel; the container keeps no network. Start the server as a background job (podman_shell with background=true): it stays "+
			"reachable until the job ends or is signalled; one started in the foreground ends, and stops answering, when its call returns. "+
			"A connection while nothing listens gets an error page at once. The URL answers only requests that name it 127.0.0.1 or "+
			"localhost and come from no web page or one on the user's machine (other pages are refused). At most %d ports; they close "+
			"when the session ends, and go with a workspace handed over with its container (workspace_handoff), open for the session "+
			"that attaches it.", workspace.MaxPorts),
		annotations: annotate(false, false, true),
		handle: func(ctx context.Context, ws PortPreviews, p WorkspacePortParams) (WorkspacePortResult, error) {
			r := WorkspacePortResult{Action: p.Action}
			switch p.Action {
			case PortOpen:
				opened, all, err := ws.OpenPort(ctx, p.Port)
				if err != nil {
					return r, err
				}
				r.Port, r.Ports = &PortView{Port: opened.Port, URL: opened.URL}, portViews(all)
			case PortClose:
				all, err := ws.ClosePort(p.Port)
				if err != nil {
					return r, err
				}
				r.Ports = portViews(all)
			default:
				r.Ports = portViews(ws.Ports())
			}
			return r, nil
		},
	})
}
