package integration

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// complete asks for the completions of the files template's path.
func (p *proc) complete(value string) []string {
	p.t.Helper()
	var req mcp.CompleteRequest
	req.Params.Ref = mcp.ResourceReference{Type: "ref/resource", URI: "wink://workspace/files/{+path}"}
	req.Params.Argument = mcp.CompleteArgument{Name: "path", Value: value}
	res, err := p.client.Complete(context.Background(), req)
	if err != nil {
		p.t.Fatalf("completion/complete %q: %v", value, err)
	}
	return res.Completion.Values
}

// TestPathCompletion completes the path of the files resource template
// from the session's /workspace, over each transport; a path that leaves
// the workspace completes to nothing.
func TestPathCompletion(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr})
		p.run("sh", "-c", "mkdir -p src/sub && touch src/main.go src/mod.go srcx 'src/a b.txt'")
		for value, want := range map[string][]string{
			"sr":       {"src/", "srcx"},
			"src/m":    {"src/main.go", "src/mod.go"},
			"src/":     {"src/sub/", "src/a b.txt", "src/main.go", "src/mod.go"},
			"src/nope": {},
			"../":      {},
			"/etc/pa":  {},
			"nodir/x":  {},
		} {
			if got := p.complete(value); !slices.Equal(got, want) {
				t.Errorf("completing %q: %q, want %q", value, got, want)
			}
		}
	})
}

// TestPromptProfileArgument: with profiles, the workspace prompt takes a
// profile argument, which completion/complete completes from the
// profiles' names and prompts/get turns into the instruction to switch to
// it; a name no profile has, or an argument the prompt does not take, is
// an error that says what it takes; over each transport.
func TestPromptProfileArgument(t *testing.T) {
	file, _ := profilesFile(t, "profiles:\n  py:\n    description: Python\n    image: PY_IMAGE\n  pyro:\n    description: more Python\n    image: PY_IMAGE\n  node:\n    description: Node.js\n    image: IMAGE\n")
	eachTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr, args: []string{"--profiles", file, "--lazy", "--no-builtin-profiles"}})
		ctx := context.Background()
		list, err := p.client.ListPrompts(ctx, mcp.ListPromptsRequest{})
		if err != nil || len(list.Prompts) != 1 || len(list.Prompts[0].Arguments) != 1 || list.Prompts[0].Arguments[0].Name != "profile" {
			t.Fatalf("prompts/list: %+v %v; want the prompt with its profile argument", list, err)
		}
		for value, want := range map[string][]string{"": {"node", "py", "pyro"}, "py": {"py", "pyro"}, "n": {"node"}, "rust": {}, "../": {}} {
			var req mcp.CompleteRequest
			req.Params.Ref = mcp.PromptReference{Type: "ref/prompt", Name: "podman_workspace"}
			req.Params.Argument = mcp.CompleteArgument{Name: "profile", Value: value}
			res, err := p.client.Complete(ctx, req)
			if err != nil || !slices.Equal(res.Completion.Values, want) {
				t.Errorf("completing the profile %q: %+v %v, want %q", value, res, err, want)
			}
		}
		get := func(args map[string]string) (string, error) {
			res, err := p.client.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "podman_workspace", Arguments: args}})
			if err != nil {
				return "", err
			}
			return res.Messages[0].Content.(mcp.TextContent).Text, nil
		}
		if text, err := get(map[string]string{"profile": "pyro"}); err != nil || !strings.Contains(text, "the user chose `pyro` for this task: before anything else, switch to it with `workspace_profile`") {
			t.Errorf("prompts/get with profile pyro: %v\n%s", err, text)
		}
		if _, err := get(map[string]string{"profile": "rust"}); err == nil || !strings.Contains(err.Error(), `no profile is named "rust"`) || !strings.Contains(err.Error(), "node, py, pyro") {
			t.Errorf("prompts/get with an unknown profile: %v, want an error naming the profiles", err)
		}
		if _, err := get(map[string]string{"task": "x"}); err == nil || !strings.Contains(err.Error(), `no argument "task"`) {
			t.Errorf("prompts/get with an unknown argument: %v", err)
		}
		if text, err := get(nil); err != nil || !strings.Contains(text, "switch with `workspace_profile` to the one the task needs") {
			t.Errorf("prompts/get without arguments: %v\n%s", err, text)
		}
	})
}
