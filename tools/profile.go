package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/invopop/jsonschema"
	"github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/workspace"
)

// Profile is a profile as the workspace_profile tool describes it.
type Profile struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// WorkspaceProfileParams are workspace_profile's arguments.
type WorkspaceProfileParams struct {
	Name    string `json:"name" jsonschema:"maxLength=40" jsonschema_description:"The profile to use."`
	Restart bool   `json:"restart,omitempty" jsonschema_description:"Replace a container that has already run calls under another profile: its processes and background jobs end, the files in /workspace stay. Without it, such a change is refused."`
}

// WorkspaceProfileResult is workspace_profile's result.
type WorkspaceProfileResult struct {
	Profile   string `json:"profile" jsonschema_description:"The profile the workspace now uses."`
	Previous  string `json:"previous,omitempty" jsonschema_description:"The profile it used before (empty: the server's settings)."`
	Image     string `json:"image" jsonschema_description:"The image its container runs."`
	Built     bool   `json:"built" jsonschema_description:"True when this call waited for the profile's setup commands to run (once per change to the profile)."`
	Restarted bool   `json:"restarted" jsonschema_description:"True when a container that had run calls was replaced: its processes ended, the files in /workspace stayed."`
	Container string `json:"container" jsonschema_description:"The container's name."`
	Workdir   string `json:"workdir" jsonschema_description:"Where commands run when they name no cwd."`
}

// Text says what changed.
func (r WorkspaceProfileResult) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "profile %s: image %s, container %s, commands run in %s by default", r.Profile, r.Image, r.Container, r.Workdir)
	if r.Built {
		b.WriteString("\nthe profile's setup ran for this call; later sessions start from its image at once")
	}
	if r.Restarted {
		fmt.Fprintf(&b, "\nthe container of %s was replaced: its processes ended, the files in /workspace stayed", displayName(r.Previous))
	}
	return b.String()
}

func displayName(profile string) string {
	if profile == "" {
		return "the server's settings"
	}
	return "profile " + profile
}

// ProfileSwitcher is what workspace_profile takes of a session's workspace.
type ProfileSwitcher interface {
	// UseProfile switches the workspace to a profile, building its image
	// first if its setup has not run, and replacing a container that has
	// served calls under another profile only with restart; progress
	// receives reports while its image is built.
	UseProfile(ctx context.Context, name string, restart bool, progress func(workspace.Progress)) (workspace.ProfileChange, error)
}

// WorkspaceProfile returns the workspace_profile tool, which offers the
// profiles.
//
// A tool, not a podman_shell argument or a connection parameter: the model
// is who learns from the task which toolchain it needs, and a tool is what
// it calls; the choice is then one call with its own result (image, whether
// the setup ran, whether a container was replaced), and a build that takes
// minutes reports progress on it. Over HTTP, `?profile=NAME` on the URL
// picks one for a client that knows before the session starts.
//
// detected, when not "", says what the server found in the host folders
// about the toolchain they need; the description ends with it.
func WorkspaceProfile(workspaceFor WorkspaceFor, profiles []Profile, detected string) (server.ServerTool, error) {
	var list strings.Builder
	names := make([]any, 0, len(profiles))
	for _, p := range profiles {
		fmt.Fprintf(&list, "\n- %s: %s", p.Name, p.Description)
		names = append(names, p.Name)
	}
	if detected != "" {
		list.WriteString("\n" + detected)
	}
	return build(workspaceFor, definition[ProfileSwitcher, WorkspaceProfileParams, WorkspaceProfileResult]{
		name:  "workspace_profile",
		title: "Choose the workspace's toolchain",
		description: "Switch this workspace to a profile: an image with a toolchain set up, its environment, limits, working " +
			"directory and network access. Choose before working: a container that has run calls is replaced only with " +
			"restart: true (files in /workspace stay, processes end). A profile's first use may wait for its setup to run " +
			"(minutes); later sessions start from its cached image. The profiles:" + list.String(),
		annotations: annotate(false, true, true),
		tasks:       true,
		adjust: func(s *jsonschema.Schema) {
			if t, ok := s.Properties.Get("name"); ok {
				t.Enum = names
			}
		},
		handle: func(ctx context.Context, ws ProfileSwitcher, p WorkspaceProfileParams) (WorkspaceProfileResult, error) {
			c, err := ws.UseProfile(ctx, p.Name, p.Restart, progressFrom(ctx))
			res := WorkspaceProfileResult{Profile: c.Profile, Previous: c.Previous, Image: c.Image, Built: c.Built,
				Restarted: c.Restarted, Container: c.Container.Name, Workdir: workspace.Root}
			if c.Container.Workdir != "" {
				res.Workdir = workspace.Root + "/" + c.Container.Workdir
			}
			return res, err
		},
	})
}
