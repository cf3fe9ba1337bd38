package prompts

import (
	"context"
	"strings"
	"testing"
	"time"

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

// TestTextNamesTheImageChosen checks the table's image and profile rows:
// one image, how it comes to be when it is not there yet, and the profile.
func TestTextNamesTheImageChosen(t *testing.T) {
	text := Text(Info{Image: "localhost/wink-profile:go-1234", ImagePending: "built from `base:1` by profile `go`'s setup on first use",
		Workspace: "/workspace", Profiles: []Profile{{Name: "go"}}, Profile: "go"})
	for _, want := range []string{"| image | `localhost/wink-profile:go-1234` (built from `base:1` by profile `go`'s setup on first use) |", "| profile | `go` |"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	if bare := Text(Info{Image: "img:1", Workspace: "/workspace"}); !strings.Contains(bare, "| image | `img:1` |\n") || strings.Contains(bare, "| profile |") {
		t.Errorf("an image that is there, without a profile:\n%s", bare)
	}
}

func TestTextSaysWhatTheNetworkReaches(t *testing.T) {
	sealed := Text(Info{Image: "i", Workspace: "/workspace"})
	if !strings.Contains(sealed, "There is no network access") || !strings.Contains(sealed, "| network | none |") {
		t.Errorf("a sealed workspace does not say so:\n%s", sealed)
	}
	open := Text(Info{Image: "i", Workspace: "/workspace", Egress: []string{"pypi.org", "*.npm.example"}})
	for _, want := range []string{"HTTP proxy", "HTTPS_PROXY", "403", "| network | HTTP proxy to `pypi.org`, `*.npm.example` only |"} {
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
	p := Workspace(nil, func(context.Context) Info { return info })
	if p.Prompt.Name != Name || p.Prompt.Title != Title || len(p.Prompt.Arguments) != 0 {
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
	bare := Text(Info{Image: "i", Workspace: "/workspace"})
	if !strings.Contains(bare, "When the session ends, the container and the files in `/workspace` go with it, unless you first hand the workspace to another session") ||
		strings.Contains(bare, "kept workspace") || strings.Contains(bare, "without a call") {
		t.Errorf("a session's own workspace is described as kept, or idleness is mentioned without a timeout:\n%s", bare)
	}
	for _, tc := range []struct {
		info Info
		want []string
	}{
		{Info{IdleTimeout: 15 * time.Minute, MaxJobAge: 2 * time.Hour},
			[]string{"After 15 minutes without a call the container is removed (kept while background jobs run, for up to 2 hours)", "processes end, files stay"}},
		{Info{IdleTimeout: 90 * time.Second}, []string{"After 90 seconds without a call the container is removed (kept while background jobs run)"}},
		{Info{CommandTimeoutSeconds: 300}, []string{"300 when a call gives no timeout"}},
		{Info{Mounts: []Mount{{HostPath: "/p", WorkspacePath: "p", Mode: "overlay"}}}, []string{"while the session lasts (`wink-mcp export`), and they go with the session when it ends"}},
		{Info{Mounts: []Mount{{HostPath: "/p", WorkspacePath: "p", Mode: "overlay"}}, ExportOnExit: true}, []string{"written as a patch for the user when the session ends"}},
		{Info{Mounts: []Mount{{HostPath: "/p", WorkspacePath: "p", Mode: "overlay"}}, Kept: "k"}, []string{"they stay in the kept workspace"}},
		{Info{Egress: []string{"pypi.org"}, EgressMaxBytes: 4 << 30}, []string{"past 4.0 GiB carried in all (both ways), every request is refused with a 403 that says so"}},
		{Info{}, []string{"`workspace_info` reports", "with its running container, jobs and open ports when both sessions are served by this server", "30 when a call gives no timeout"}},
	} {
		tc.info.Image, tc.info.Workspace = "i", "/workspace"
		text := Text(tc.info)
		for _, want := range tc.want {
			if !strings.Contains(text, want) {
				t.Errorf("%+v: text lacks %q:\n%s", tc.info, want, text)
			}
		}
	}
}

func TestPromptTakesAProfile(t *testing.T) {
	t.Parallel()
	profiles := []Profile{{Name: "python", Description: "Python 3 with pytest"}, {Name: "node", Description: "Node.js"}}
	p := Workspace(profiles, func(context.Context) Info {
		return Info{Image: "i", Workspace: "/workspace", Profiles: profiles, Profile: "node"}
	})
	if args := p.Prompt.Arguments; len(args) != 1 || args[0].Name != ProfileArgument || args[0].Required || !strings.Contains(args[0].Description, "python, node") {
		t.Errorf("arguments %+v, want one optional profile argument naming the profiles", args)
	}
	get := func(args map[string]string) (string, error) {
		var req mcp.GetPromptRequest
		req.Params.Arguments = args
		res, err := p.Handler(context.Background(), req)
		if err != nil {
			return "", err
		}
		return res.Messages[0].Content.(mcp.TextContent).Text, nil
	}
	for _, tc := range []struct {
		name string
		args map[string]string
		want string
	}{
		{"none", nil, "Before working, switch with `workspace_profile` to the one the task needs"},
		{"empty", map[string]string{"profile": ""}, "Before working, switch with `workspace_profile` to the one the task needs"},
		{"another", map[string]string{"profile": "python"}, "the workspace uses `node`, and the user chose `python` for this task: before anything else, switch to it with `workspace_profile` (name `python`"},
		{"current", map[string]string{"profile": "node"}, "the user chose `node` for this task, and the workspace already uses it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, err := get(tc.args)
			if err != nil || !strings.Contains(text, tc.want) || !strings.Contains(text, "`python`: Python 3 with pytest") {
				t.Errorf("text %q, err %v; want %q and the list", text, err, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		name string
		args map[string]string
		want []string
	}{
		{"unknown profile", map[string]string{"profile": "rust"}, []string{`argument "profile"`, `"rust"`, "python, node"}},
		{"case differs", map[string]string{"profile": "Python"}, []string{`"Python"`, "python, node"}},
		{"unknown argument", map[string]string{"profil": "python"}, []string{`no argument "profil"`, `"profile"`}},
		{"control characters", map[string]string{"profile": "py\n\x1b[31m"}, []string{`"py\n\x1b[31m"`}},
		{"huge", map[string]string{"profile": strings.Repeat("x", 1<<20)}, []string{`"` + strings.Repeat("x", 80) + `... (1048576 bytes)"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := get(tc.args)
			if err != nil && len(err.Error()) > 500 {
				t.Errorf("the error is %d bytes long", len(err.Error()))
			}
			for _, want := range tc.want {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("error %v, want it to say %s", err, want)
				}
			}
		})
	}
	bare := Workspace(nil, func(context.Context) Info { return Info{Image: "i", Workspace: "/workspace"} })
	var req mcp.GetPromptRequest
	req.Params.Arguments = map[string]string{"profile": "python"}
	if _, err := bare.Handler(context.Background(), req); err == nil || !strings.Contains(err.Error(), "takes no arguments") {
		t.Errorf("a server without profiles took a profile: %v", err)
	}
}

// The prompt names workspace_service and the services each profile
// declares, except where services are refused (Kubernetes).
func TestTextNamesServices(t *testing.T) {
	info := Info{Image: "i", Workspace: "/workspace", Profile: "app",
		Profiles: []Profile{{Name: "app", Description: "the app", Services: []string{"cache at 127.0.0.1:6379"}}, {Name: "plain"}}}
	text := Text(info)
	for _, want := range []string{"(declares services: cache at 127.0.0.1:6379; start one that does not run with `workspace_service` and its name)",
		"`workspace_service` runs a database or cache", "a checkpoint never holds its data"} {
		if !strings.Contains(text, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, text)
		}
	}
	if strings.Count(text, "declares services") != 1 {
		t.Errorf("a profile without services is said to declare some:\n%s", text)
	}
	info.NoServices = true
	if text := Text(info); strings.Contains(text, "workspace_service") {
		t.Errorf("the prompt offers services where they are refused:\n%s", text)
	}
}

// The digest is the prompt's last section, introduced by who wrote it.
func TestTextEndsWithTheDigest(t *testing.T) {
	info := Info{Image: "img", Workspace: "/workspace", Digest: "# Workspace digest\n- `make check`\n"}
	text := Text(info)
	if !strings.HasSuffix(text, info.Digest) || !strings.Contains(text, "saved with `workspace_digest`") {
		t.Errorf("a saved digest:\n%s", text)
	}
	info.DigestGenerated = true
	if text := Text(info); !strings.HasSuffix(text, info.Digest) || !strings.Contains(text, "generated by the server") {
		t.Errorf("a generated digest:\n%s", text)
	}
	if text := Text(Info{Image: "img", Workspace: "/workspace"}); strings.Contains(text, "digest") {
		t.Errorf("no digest, yet the prompt speaks of one:\n%s", text)
	}
}
