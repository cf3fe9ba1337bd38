package integration

import (
	"context"
	"slices"
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
