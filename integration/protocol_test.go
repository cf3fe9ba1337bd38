package integration

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// modernRun is what tsclient/modern.mjs prints: a 2026-07-28 client of the
// TypeScript SDK v2 driving every workspace tool through a handle.
type modernRun struct {
	Protocol, Era    string
	Tools            []string
	WithoutHandleArg []string
	NoHandle         struct {
		IsError bool
		Text    string
	}
	OpenError    string
	Handle       string
	Calls        map[string]string
	AfterRestore string
	// Fork is what a fork the client claimed with workspace_open holds in
	// the file the restore brought back.
	Fork       string
	Progress   []string
	Closed     string
	AfterClose struct {
		IsError bool
		Text    string
	}
}

// runModernClient runs tsclient/modern.mjs with args and returns what it printed.
func runModernClient(t *testing.T, args ...string) modernRun {
	t.Helper()
	if _, err := os.Stat(filepath.Join("tsclient", "node_modules", "@modelcontextprotocol", "client")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the TypeScript SDK v2 client is not installed (run make setup): %v", err)
		}
		t.Skip("the TypeScript SDK v2 client is not installed; run make setup")
	}
	cmd := exec.Command("node", append([]string{filepath.Join("tsclient", "modern.mjs")}, args...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("modern.mjs %v: %v\n%s", args, err, out)
	}
	var run modernRun
	if err := json.Unmarshal(out, &run); err != nil {
		t.Fatalf("modern.mjs printed %q: %v", out, err)
	}
	return run
}

// checkModernRun checks a run of modern.mjs: 2026-07-28 negotiated, every
// workspace tool declaring the handle argument and working with it, a long
// call's progress on its own stream, a call without one and a call after workspace_close refused with clear errors.
func checkModernRun(t *testing.T, run modernRun) {
	t.Helper()
	if run.Protocol != "2026-07-28" || run.Era != "modern" {
		t.Fatalf("negotiated %q (%s), want 2026-07-28", run.Protocol, run.Era)
	}
	if run.OpenError != "" {
		t.Fatalf("workspace_open: %s", run.OpenError)
	}
	if len(run.WithoutHandleArg) > 0 {
		t.Errorf("tools without the workspace argument mirrored to Mcp-Param-Workspace: %v", run.WithoutHandleArg)
	}
	if !run.NoHandle.IsError || !strings.Contains(run.NoHandle.Text, "workspace_open") {
		t.Errorf("a call without a handle: %+v", run.NoHandle)
	}
	for _, name := range run.Tools {
		if name == "workspace_open" || name == "workspace_close" || name == "workspace_handoff" {
			continue // handoff gives the workspace away: see docs/protocol.md
		}
		if _, ok := run.Calls[name]; !ok {
			t.Errorf("%s was not driven", name)
		}
	}
	for name, result := range run.Calls {
		switch {
		case result == "ok":
		case name == "evaluate_python" && strings.Contains(result, "needs python3, and the image "+testImage):
			// The test image has no Python: the call reached the handle's workspace.
		case name == "workspace_attach" && strings.Contains(result, "handle") && !strings.Contains(result, "workspace_open"):
			// A made-up handoff handle, refused by the handle's workspace.
		default:
			t.Errorf("%s with the handle: %s", name, result)
		}
	}
	if run.AfterRestore != "two\n" {
		t.Errorf("after workspace_restore, the file holds %q", run.AfterRestore)
	}
	if run.Fork != "two\n" {
		t.Errorf("a fork claimed with workspace_open: the file holds %q", run.Fork)
	}
	if len(run.Progress) == 0 {
		t.Error("a 5 s command sent no progress on its call's stream")
	}
	if run.Closed != "ok" || !run.AfterClose.IsError || !strings.Contains(run.AfterClose.Text, "unknown workspace handle") {
		t.Errorf("workspace_close: %s, then a call: %+v", run.Closed, run.AfterClose)
	}
}

// TestTypeScriptSDK2OnStdio drives every workspace tool through handles
// with the TypeScript SDK v2 client over stdio, pinned to 2026-07-28 and
// with negotiation auto; the handle's container goes with workspace_close.
func TestTypeScriptSDK2OnStdio(t *testing.T) {
	for _, mode := range []string{"pin", "auto"} {
		t.Run(mode, func(t *testing.T) {
			prefix := "wt" + randomHex(4)
			run := runModernClient(t, mode, "stdio", winkBin, "--transport", "stdio", "--image", testImage, "--cache-dir", t.TempDir(),
				"--name-prefix", prefix, "--podman-url", "unix://"+podmanSocket)
			checkModernRun(t, run)
			waitUntil(t, 30*time.Second, "the handle's container to go", func() bool { return len(containersNamed(t, prefix)) == 0 })
		})
	}
}

// TestTypeScriptSDK2OnStreamableHTTP does the same over streamable HTTP
// with a bearer token; the server outlives the client, and the container
// goes with workspace_close, not with a connection.
func TestTypeScriptSDK2OnStreamableHTTP(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokenFile, []byte(testToken), 0o600); err != nil {
		t.Fatal(err)
	}
	p := launch(t, startOptions{transport: "http", args: []string{"--auth-token-file", tokenFile}})
	for _, mode := range []string{"pin", "auto"} {
		t.Run(mode, func(t *testing.T) {
			checkModernRun(t, runModernClient(t, mode, "http", p.url, testToken))
			waitHandleContainersGone(t, p)
		})
	}
}

// waitHandleContainersGone waits until no container of a handle p opened
// (its log's "workspace handle opened" or "... adopted from its record") is left: the server's warm pool
// keeps containers of its own.
func waitHandleContainersGone(t *testing.T, p *proc) {
	t.Helper()
	var sessions []string
	for _, line := range strings.Split(p.logs.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && (rec["msg"] == "workspace handle opened" || rec["msg"] == "workspace handle adopted from its record") {
			sessions = append(sessions, rec["session"].(string))
		}
	}
	if len(sessions) == 0 {
		t.Fatalf("no workspace handle was opened:\n%s", p.logs.String())
	}
	waitUntil(t, 30*time.Second, "the handles' containers to go", func() bool {
		for _, s := range sessions {
			if len(containersNamed(t, p.prefix+"-"+s)) > 0 {
				return false
			}
		}
		return true
	})
}

// modernClient is mcp-go's client at its newest revision (2026-07-28)
// over streamable HTTP with token.
func modernClient(t *testing.T, url, token string) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "wink-integration-modern", Version: "0"}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		t.Fatal(err)
	}
	if res.ProtocolVersion != mcp.ProtocolVersion20260728 {
		t.Fatalf("mcp-go's client negotiated %q, want 2026-07-28", res.ProtocolVersion)
	}
	if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil { // for the Mcp-Param-* headers
		t.Fatal(err)
	}
	return c
}

// callTool calls name with args on c and returns the result's text and
// whether it is an error.
func callTool(t *testing.T, c *client.Client, name string, args map[string]any) (string, bool) {
	t.Helper()
	var req mcp.CallToolRequest
	req.Params.Name, req.Params.Arguments = name, args
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var text []string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			text = append(text, tc.Text)
		}
	}
	return strings.Join(text, "\n"), res.IsError
}

// TestHandlesOfTwoPrincipals: two bearer tokens, two principals, with
// mcp-go's client at 2026-07-28. Neither can use, close or guess the
// other's handle, and every refusal reads as for a handle never issued;
// a handle in the URL's query string is refused before anything else.
func TestHandlesOfTwoPrincipals(t *testing.T) {
	other := "integration-token-other-0123456789"
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokenFile, []byte(testToken+"\n"+other+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := launch(t, startOptions{transport: "http", args: []string{"--auth-token-file", tokenFile}})
	alice, bob := modernClient(t, p.url, testToken), modernClient(t, p.url, other)

	text, isError := callTool(t, alice, "workspace_open", nil)
	if isError {
		t.Fatalf("workspace_open: %s", text)
	}
	handle := text[strings.LastIndex(text, " ")+1:]
	if text, isError := callTool(t, alice, "write_file", map[string]any{"file_path": "secret.txt", "content": "alice's", "workspace": handle}); isError {
		t.Fatalf("alice writing with her handle: %s", text)
	}
	unknown, _ := callTool(t, bob, "ls", map[string]any{"path": ".", "workspace": "wsh_never-issued"})
	if !strings.Contains(unknown, "unknown workspace handle") {
		t.Fatalf("an unknown handle: %s", unknown)
	}
	for _, call := range []struct {
		name string
		args map[string]any
	}{
		{"read_file", map[string]any{"file_path": "secret.txt", "workspace": handle}},
		{"workspace_close", map[string]any{"workspace": handle}},
		{"ls", map[string]any{"path": ".", "workspace": handle[:len(handle)-1] + "A"}},
	} {
		if text, isError := callTool(t, bob, call.name, call.args); !isError || text != unknown {
			t.Errorf("bob's %s with alice's handle: %q (error %v), want exactly %q", call.name, text, isError, unknown)
		}
	}
	if text, isError := callTool(t, alice, "read_file", map[string]any{"file_path": "secret.txt", "workspace": handle}); isError || !strings.Contains(text, "alice's") {
		t.Errorf("alice reading after bob's attempts: %s", text)
	}

	req, _ := http.NewRequest(http.MethodPost, p.url+"?workspace="+handle, strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a handle in the query string: status %d, want 400", resp.StatusCode)
	}

	if text, isError := callTool(t, alice, "workspace_close", map[string]any{"workspace": handle}); isError {
		t.Fatalf("alice closing her handle: %s", text)
	}
	waitHandleContainersGone(t, p)
}

// TestLegacySessionRefusesAHandleArgument: a 2025 session has its own
// workspace, and is told so when it passes one; it is shown neither the
// handle tools nor the argument.
func TestLegacySessionRefusesAHandleArgument(t *testing.T) {
	p := start(t, startOptions{})
	res := p.call("ls", map[string]any{"path": ".", "workspace": "wsh_x"})
	if !res.IsError || !strings.Contains(res.Content[0].(mcp.TextContent).Text, "for clients of MCP revision 2026-07-28") {
		t.Errorf("a 2025 call with a handle: %+v", res.Content)
	}
	tools, err := p.client.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		listed, _ := json.Marshal(tool)
		if tool.Name == "workspace_open" || tool.Name == "workspace_close" || strings.Contains(string(listed), "x-mcp-header") {
			t.Errorf("a 2025 session is shown %s: %s", tool.Name, listed)
		}
	}
}

// TestIdleHandleExpires: a handle with no call for --idle-timeout ends, and
// its container with it, though no connection ever closed.
func TestIdleHandleExpires(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokenFile, []byte(testToken), 0o600); err != nil {
		t.Fatal(err)
	}
	p := launch(t, startOptions{transport: "http", args: []string{"--auth-token-file", tokenFile, "--idle-timeout", "2s"}})
	c := modernClient(t, p.url, testToken)
	text, isError := callTool(t, c, "workspace_open", nil)
	if isError {
		t.Fatalf("workspace_open: %s", text)
	}
	handle := text[strings.LastIndex(text, " ")+1:]
	if text, isError := callTool(t, c, "podman_shell", map[string]any{"command": []string{"true"}, "workspace": handle}); isError {
		t.Fatalf("a call with the handle: %s", text)
	}
	p.waitLog(30*time.Second, "workspace handle expired", nil)
	waitHandleContainersGone(t, p)
	if text, _ := callTool(t, c, "ls", map[string]any{"path": ".", "workspace": handle}); !strings.Contains(text, "unknown workspace handle") {
		t.Errorf("the expired handle: %s", text)
	}
}

// TestKeptWorkspaceThroughHandles: workspace_open with a name opens a kept
// workspace, whose files outlive the handle: a second handle of the same
// principal finds them; another principal is not given them.
func TestKeptWorkspaceThroughHandles(t *testing.T) {
	other := "integration-token-other-0123456789"
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokenFile, []byte(testToken+"\n"+other+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := launch(t, startOptions{transport: "http", args: []string{"--auth-token-file", tokenFile}})
	alice, bob := modernClient(t, p.url, testToken), modernClient(t, p.url, other)
	name := "kept-" + randomHex(4)
	open := func(c *client.Client) (string, bool) {
		text, isError := callTool(t, c, "workspace_open", map[string]any{"name": name})
		return text[strings.LastIndex(text, " ")+1:], isError
	}
	first, isError := open(alice)
	if isError {
		t.Fatalf("workspace_open %s: %s", name, first)
	}
	if text, isError := callTool(t, alice, "write_file", map[string]any{"file_path": "kept.txt", "content": "still here", "workspace": first}); isError {
		t.Fatalf("write_file: %s", text)
	}
	if text, isError := callTool(t, alice, "workspace_close", map[string]any{"workspace": first}); isError {
		t.Fatalf("workspace_close: %s", text)
	}
	second, isError := open(alice)
	if isError || second == first {
		t.Fatalf("reopening %s: %s", name, second)
	}
	if text, isError := callTool(t, alice, "read_file", map[string]any{"file_path": "kept.txt", "workspace": second}); isError || !strings.Contains(text, "still here") {
		t.Errorf("the kept file through a new handle: %s", text)
	}
	if text, isError := callTool(t, alice, "workspace_close", map[string]any{"workspace": second}); isError {
		t.Fatalf("workspace_close: %s", text)
	}
	text, isError := callTool(t, bob, "workspace_open", map[string]any{"name": name})
	if isError && !strings.Contains(text, name) {
		t.Errorf("another principal opening %s is refused without naming it: %s", name, text)
	}
	if !isError {
		theirs := text[strings.LastIndex(text, " ")+1:]
		text, _ := callTool(t, bob, "read_file", map[string]any{"file_path": "kept.txt", "workspace": theirs})
		if strings.Contains(text, "still here") {
			t.Errorf("another principal was given alice's kept workspace: %s", text)
		}
		callTool(t, bob, "workspace_close", map[string]any{"workspace": theirs})
	}
}

// testTraceparent is a W3C traceparent a test call carries in its _meta.
const testTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// TestModernCallGetsItsWorkspaceLogs: a 2026-07-28 call that names a log
// level in its _meta gets its workspace's records (here the container made
// by the first call, with --lazy and no pool) as notifications/message on its own
// stream; a call that names none gets none. The traceparent in its _meta
// is in the server's log of the call.
func TestModernCallGetsItsWorkspaceLogs(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokenFile, []byte(testToken), 0o600); err != nil {
		t.Fatal(err)
	}
	p := launch(t, startOptions{transport: "http", args: []string{"--auth-token-file", tokenFile, "--lazy", "--warm", "0"}})
	c := modernClient(t, p.url, testToken)
	var mu sync.Mutex
	var heard []string
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationMessage) {
			data, _ := json.Marshal(n.Params.AdditionalFields["data"])
			mu.Lock()
			heard = append(heard, string(data))
			mu.Unlock()
		}
	})
	call := func(handle string, level string) {
		var req mcp.CallToolRequest
		req.Params.Name = "podman_shell"
		req.Params.Arguments = map[string]any{"command": []string{"true"}, "workspace": handle}
		if level != "" {
			req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{mcp.MetaKeyLogLevel: level, "traceparent": testTraceparent}}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if res, err := c.CallTool(ctx, req); err != nil || res.IsError {
			t.Fatalf("podman_shell: %v %+v", err, res)
		}
	}
	open := func() string {
		text, isError := callTool(t, c, "workspace_open", nil)
		if isError {
			t.Fatalf("workspace_open: %s", text)
		}
		return text[strings.LastIndex(text, " ")+1:]
	}
	call(open(), "")
	mu.Lock()
	if len(heard) > 0 {
		t.Errorf("a call that asked for no logs got %v", heard)
	}
	mu.Unlock()
	call(open(), "info")
	if rec := p.waitLog(10*time.Second, "tool call", map[string]any{"traceparent": testTraceparent}); rec["tool"] != "podman_shell" {
		t.Errorf("the call's traceparent was logged with %v", rec)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(strings.Join(heard, "\n"), `"message":"workspace ready"`) {
		t.Errorf("a call that asked for info logs heard %v, want its container's \"workspace ready\"", heard)
	}
}

// TestModernTasksListIsRefused: over streamable HTTP a 2026-07-28 request
// has no session, and mcp-go would list every session's tasks to it; it is
// refused instead, naming the extension (which has no tasks/list).
func TestModernTasksListIsRefused(t *testing.T) {
	p := launch(t, startOptions{transport: "http"})
	body := `{"jsonrpc":"2.0","id":1,"method":"tasks/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"0"}}}}`
	req, _ := http.NewRequest(http.MethodPost, p.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tasks/list")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(answer), "io.modelcontextprotocol/tasks extension") {
		t.Errorf("a 2026-07-28 tasks/list was answered %d: %s", resp.StatusCode, answer)
	}
}
