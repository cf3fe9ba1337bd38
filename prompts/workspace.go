// Package prompts holds the guidance wink-mcp gives a model about its
// sandbox: the "Podman Workspace" prompt, whose text is also the server's
// instructions.
package prompts

import (
	"context"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Name and Title of the workspace prompt.
const (
	Name  = "podman_workspace"
	Title = "Podman Workspace"
)

// Mount is a host folder exposed in the workspace.
type Mount struct {
	HostPath      string
	WorkspacePath string
	Mode          string
}

// Info is what the prompt tells the model about its sandbox.
type Info struct {
	// Image is the container image the workspace runs.
	Image string
	// Workspace is the workspace directory inside the container.
	Workspace string
	// ShellTimeoutSeconds is podman_shell's longest timeout.
	ShellTimeoutSeconds int
	// Mounts lists the host folders exposed in the workspace.
	Mounts []Mount
}

// Text renders the guidance: what the sandbox is, then a table of the live settings.
func Text(info Info) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You have an isolated Linux container powered by Podman, created for this session and removed when it ends.\n\n")
	fmt.Fprintf(&b, "- The file tools (ls, read_file, write_file, edit_file, glob, grep, rm) mirror a virtual filesystem interface but operate on `%s` inside the container. Their paths are relative to `%s`.\n", info.Workspace, info.Workspace)
	fmt.Fprintf(&b, "- `podman_shell` runs short commands (at most %d seconds each) in the same environment, starting in `%s`; files written by either are immediately visible to the other.\n", info.ShellTimeoutSeconds, info.Workspace)
	fmt.Fprintf(&b, "- There is no network access and no privileged operation: you run as an unprivileged user with no capabilities, and memory, CPU and process counts are limited.\n")
	fmt.Fprintf(&b, "- Do not assume files outside `%s` exist, and keep your work inside it; `/tmp` is a small scratch area.\n\n", info.Workspace)
	fmt.Fprintf(&b, "| setting | value |\n| --- | --- |\n")
	fmt.Fprintf(&b, "| image | `%s` |\n", info.Image)
	fmt.Fprintf(&b, "| workspace | `%s` |\n", info.Workspace)
	if len(info.Mounts) == 0 {
		fmt.Fprintf(&b, "| mounted host paths | none |\n")
	}
	for _, m := range info.Mounts {
		fmt.Fprintf(&b, "| mount | `%s` at `%s/%s` (%s) |\n", m.HostPath, info.Workspace, m.WorkspacePath, m.Mode)
	}
	return b.String()
}

// Workspace returns the prompt and its handler.
func Workspace(info Info) server.ServerPrompt {
	text := Text(info)
	prompt := mcp.NewPrompt(Name,
		mcp.WithPromptTitle(Title),
		mcp.WithPromptDescription("What the Podman workspace sandbox is, how its tools relate, and its limits."),
	)
	handler := func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return mcp.NewGetPromptResult(Title, []mcp.PromptMessage{
			mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(text)),
		}), nil
	}
	return server.ServerPrompt{Prompt: prompt, Handler: handler}
}
