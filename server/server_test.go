package server

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/engine/enginetest"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// newTestServer builds a server whose engine is never reached: these tests
// stop at the protocol and at argument validation.
func newTestServer(t testing.TB) *Server {
	t.Helper()
	cfg := workspace.DefaultConfig()
	cfg.CacheDir = t.TempDir()
	cfg.Image = "localhost/test-image:1"
	cfg.Engine = enginetest.Unreachable{URI: "unix://" + t.TempDir() + "/no-podman.sock"}
	cfg.AgentBinary = enginetest.NeverRunAgent(t)
	s, err := New(Config{Workspace: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func connect(t *testing.T, s *Server) (*client.Client, *mcp.InitializeResult) {
	t.Helper()
	c, err := client.NewInProcessClient(s.mcp)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var req mcp.InitializeRequest
	req.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	req.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "0"}
	init, err := c.Initialize(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return c, init
}

func TestInitializeCarriesInstructions(t *testing.T) {
	_, init := connect(t, newTestServer(t))
	if init.ServerInfo.Name != "wink-mcp" {
		t.Errorf("server name %q", init.ServerInfo.Name)
	}
	for _, want := range []string{"/workspace", "podman_shell", "localhost/test-image:1", "no network"} {
		if !strings.Contains(init.Instructions, want) {
			t.Errorf("instructions lack %q:\n%s", want, init.Instructions)
		}
	}
}

func TestListsToolsAndPrompt(t *testing.T) {
	c, _ := connect(t, newTestServer(t))
	ctx := context.Background()
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if !strings.Contains(strings.Join(names, ","), "podman_shell") {
		t.Errorf("tools = %v", names)
	}
	prompts, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(prompts.Prompts) != 1 || prompts.Prompts[0].Name != "podman_workspace" || prompts.Prompts[0].Title != "Podman Workspace" {
		t.Fatalf("prompts = %+v", prompts.Prompts)
	}
	var get mcp.GetPromptRequest
	get.Params.Name = "podman_workspace"
	got, err := c.GetPrompt(ctx, get)
	if err != nil {
		t.Fatal(err)
	}
	if text := got.Messages[0].Content.(mcp.TextContent).Text; !strings.Contains(text, "/workspace") {
		t.Errorf("prompt text %q", text)
	}
}

func TestBadArgumentsAreToolErrors(t *testing.T) {
	c, _ := connect(t, newTestServer(t))
	var req mcp.CallToolRequest
	req.Params.Name = "podman_shell"
	req.Params.Arguments = map[string]any{"command": []string{"true"}, "timeout_seconds": 1801}
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(res.Content[0].(mcp.TextContent).Text, "timeout_seconds: must be at most 1800 (got 1801)") {
		t.Errorf("got %+v", res)
	}
}

// The Podman engine's words for this are tested through the command
// (cmd/wink-mcp: TestUnreachablePodmanIsAClearToolError).
func TestUnreachableEngineIsAClearToolError(t *testing.T) {
	c, _ := connect(t, newTestServer(t))
	var req mcp.CallToolRequest
	req.Params.Name = "podman_shell"
	req.Params.Arguments = map[string]any{"command": []string{"true"}}
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(mcp.TextContent).Text
	for _, want := range []string{"cannot reach the test engine", "no-podman.sock", enginetest.Unreachable{}.ServiceFix()} {
		if !res.IsError || !strings.Contains(text, want) {
			t.Errorf("error %q lacks %q", text, want)
		}
	}
}

func TestPanicsBecomeToolErrors(t *testing.T) {
	s := newTestServer(t)
	handler := s.observe(func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) { panic("boom") })
	res, err := handler(context.Background(), mcp.CallToolRequest{})
	if err != nil || !res.IsError {
		t.Errorf("panic gave %v, %v", res, err)
	}
	stray := s.observe(func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, os.ErrDeadlineExceeded
	})
	if res, err := stray(context.Background(), mcp.CallToolRequest{}); err != nil || !res.IsError {
		t.Errorf("stray error gave %v, %v", res, err)
	}
}
