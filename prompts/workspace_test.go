package prompts

import (
	"context"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestTextNamesTheSandboxAndItsSettings(t *testing.T) {
	info := Info{Image: "img:1", Workspace: "/workspace", ShellTimeoutSeconds: 120,
		Mounts: []Mount{{HostPath: "/home/u/proj", WorkspacePath: "proj", Mode: "overlay"}}}
	text := Text(info)
	for _, want := range []string{"isolated Linux container powered by Podman", "operate on `/workspace`", "at most 120 seconds",
		"no network access", "Do not assume files outside `/workspace` exist", "| image | `img:1` |", "`/home/u/proj` at `/workspace/proj` (overlay)"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	if !strings.Contains(text, "`workspace_changes` lists them") {
		t.Errorf("a workspace with mounts does not say how to see the changes:\n%s", text)
	}
	bare := Text(Info{Image: "i", Workspace: "/workspace"})
	if strings.Contains(bare, "| mount |") || strings.Contains(bare, "workspace_changes") {
		t.Errorf("a workspace without mounts speaks of them:\n%s", bare)
	}
	if roots := Text(Info{Image: "i", Workspace: "/workspace", ClientRoots: true}); !strings.Contains(roots, "declares as its roots") {
		t.Errorf("client roots are not mentioned:\n%s", roots)
	}
	if !strings.Contains(bare, "memory, CPU and process counts are limited") {
		t.Errorf("an enforcing host's text does not say the limits hold:\n%s", bare)
	}
	open := Text(Info{Image: "i", Workspace: "/workspace", Unenforced: "memory, CPU"})
	if strings.Contains(open, "are limited") || !strings.Contains(open, "cannot enforce the memory, CPU limits") || !strings.Contains(open, "| limits not enforced | memory, CPU |") {
		t.Errorf("a host without limits is not said to lack them:\n%s", open)
	}
}

func TestTextSaysWhatTheNetworkReaches(t *testing.T) {
	sealed := Text(Info{Image: "i", Workspace: "/workspace"})
	if !strings.Contains(sealed, "There is no network access") || !strings.Contains(sealed, "| network | none |") {
		t.Errorf("a sealed workspace does not say so:\n%s", sealed)
	}
	open := Text(Info{Image: "i", Workspace: "/workspace", Egress: []string{"pypi.org", "*.npmjs.org"}})
	for _, want := range []string{"HTTP proxy", "HTTPS_PROXY", "403", "| network | HTTP proxy to `pypi.org`, `*.npmjs.org` only |"} {
		if !strings.Contains(open, want) {
			t.Errorf("an egress workspace's text lacks %q:\n%s", want, open)
		}
	}
	if strings.Contains(open, "There is no network access") {
		t.Errorf("an egress workspace says it has no network:\n%s", open)
	}
	ask := Text(Info{Image: "i", Workspace: "/workspace", EgressAsk: true})
	if !strings.Contains(ask, "the user is asked") || !strings.Contains(ask, "| network | HTTP proxy to the hosts the user allows when asked |") {
		t.Errorf("an asking workspace does not say so:\n%s", ask)
	}
}

func TestPromptServesTheText(t *testing.T) {
	info := Info{Image: "img:1", Workspace: "/workspace", ShellTimeoutSeconds: 120}
	p := Workspace(func(context.Context) Info { return info })
	if p.Prompt.Name != Name || p.Prompt.Title != Title {
		t.Errorf("prompt %+v", p.Prompt)
	}
	res, err := p.Handler(context.Background(), mcp.GetPromptRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Messages[0].Content.(mcp.TextContent).Text; got != Text(info) {
		t.Errorf("prompt text differs from Text")
	}
}

func TestTextSaysWhatOutlivesTheSession(t *testing.T) {
	kept := Text(Info{Image: "i", Workspace: "/workspace", Kept: "proj-1"})
	for _, want := range []string{`kept workspace "proj-1"`, "stay when the session ends", "| kept workspace | `proj-1` |", "`workspace_checkpoint` saves", "`workspace_restore`"} {
		if !strings.Contains(kept, want) {
			t.Errorf("a kept workspace's text lacks %q:\n%s", want, kept)
		}
	}
	if bare := Text(Info{Image: "i", Workspace: "/workspace"}); !strings.Contains(bare, "removed when it ends") || strings.Contains(bare, "kept workspace") {
		t.Errorf("a session's own workspace is described as kept:\n%s", bare)
	}
}
