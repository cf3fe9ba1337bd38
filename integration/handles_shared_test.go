package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/wink-mcp/wink-mcp/tools"
)

// twoTokens writes a token file with testToken and another, which it returns.
func twoTokens(t *testing.T) (file, other string) {
	t.Helper()
	other = "integration-token-other-0123456789"
	file = filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte(testToken+"\n"+other+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return file, other
}

// openHandle calls workspace_open with args and returns the handle.
func openHandle(t *testing.T, c *client.Client, args map[string]any) string {
	t.Helper()
	text, isError := callTool(t, c, "workspace_open", args)
	if isError {
		t.Fatalf("workspace_open %v: %s", args, text)
	}
	return text[strings.LastIndex(text, " ")+1:]
}

// TestKeptHandleSurvivesARestart on Podman: a handle on a kept workspace
// still works after its server is SIGKILLed and started again on the same
// cache directory (its record is there, by digest only); another
// principal's use of it reads exactly as a handle never issued; closed, it
// is refused and its record is gone. A handle on a workspace that is not
// kept ends with its server.
func TestKeptHandleSurvivesARestart(t *testing.T) {
	tokenFile, other := twoTokens(t)
	cache := t.TempDir()
	args := []string{"--auth-token-file", tokenFile}
	p := launch(t, startOptions{transport: "http", cache: cache, args: args})
	alice := modernClient(t, p.url, testToken)
	name := "kept-" + randomHex(4)
	handle := openHandle(t, alice, map[string]any{"name": name})
	plain := openHandle(t, alice, nil)
	if text, isError := callTool(t, alice, "write_file", map[string]any{"file_path": "kept.txt", "content": "before the restart", "workspace": handle}); isError {
		t.Fatalf("write_file: %s", text)
	}
	records, _ := filepath.Glob(filepath.Join(cache, "workspaces", name, "handles", "*.json"))
	if len(records) != 1 {
		t.Fatalf("records %v; want one", records)
	}
	if data, _ := os.ReadFile(records[0]); strings.Contains(string(data), strings.TrimPrefix(handle, "wsh_")) {
		t.Fatalf("the record holds the handle: %s", data)
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.waitExit(10 * time.Second)

	again := launch(t, startOptions{transport: "http", cache: cache, args: args})
	alice, bob := modernClient(t, again.url, testToken), modernClient(t, again.url, other)
	unknown, _ := callTool(t, bob, "ls", map[string]any{"path": ".", "workspace": "wsh_never-issued"})
	if !strings.Contains(unknown, "unknown workspace handle") {
		t.Fatalf("a handle never issued: %s", unknown)
	}
	if text, isError := callTool(t, bob, "read_file", map[string]any{"file_path": "kept.txt", "workspace": handle}); !isError || text != unknown {
		t.Errorf("bob with alice's handle after the restart: %q, want exactly %q", text, unknown)
	}
	if text, isError := callTool(t, alice, "read_file", map[string]any{"file_path": "kept.txt", "workspace": handle}); isError || !strings.Contains(text, "before the restart") {
		t.Fatalf("alice's kept handle after the restart: %s", text)
	}
	again.waitLog(5*time.Second, "workspace handle adopted from its record", nil)
	if text, isError := callTool(t, alice, "podman_shell", map[string]any{"command": []string{"cat", "kept.txt"}, "workspace": handle}); isError || !strings.Contains(text, "before the restart") {
		t.Errorf("a command under the kept handle after the restart: %s", text)
	}
	if text, _ := callTool(t, alice, "ls", map[string]any{"path": ".", "workspace": plain}); text != unknown {
		t.Errorf("a handle on a workspace that is not kept, after the restart: %q, want %q", text, unknown)
	}
	if text, isError := callTool(t, alice, "workspace_close", map[string]any{"workspace": handle}); isError {
		t.Fatalf("workspace_close: %s", text)
	}
	if records, _ := filepath.Glob(filepath.Join(cache, "workspaces", name, "handles", "*.json")); len(records) != 0 {
		t.Errorf("records %v after the close", records)
	}
	if text, _ := callTool(t, alice, "ls", map[string]any{"path": ".", "workspace": handle}); text != unknown {
		t.Errorf("the closed handle: %q", text)
	}
	waitHandleContainersGone(t, again)
	waitUntil(t, 30*time.Second, "the killed server's containers to be swept", func() bool { return len(containersNamed(t, p.prefix)) == 0 })
}

// TestHandoffBetweenASessionAndAHandle: a 2025 session hands its
// workspace to a 2026-07-28 client, which takes it over with
// workspace_open's handoff argument (container, files and a running job
// along); the client hands it back with workspace_handoff under its handle,
// and a 2025 session attaches it. Another principal cannot take a handoff,
// and a handoff handle works once.
func TestHandoffBetweenASessionAndAHandle(t *testing.T) {
	tokenFile, other := twoTokens(t)
	p := start(t, startOptions{transport: "http", headers: map[string]string{"Authorization": "Bearer " + testToken},
		args: []string{"--auth-token-file", tokenFile}})
	p.tool("write_file", map[string]any{"file_path": "given.txt", "content": "from the 2025 session"}, &tools.WriteFileResult{})
	job := p.shell(map[string]any{"command": []string{"sleep", "300"}, "background": true})
	home := p.container()
	var given tools.WorkspaceHandoffResult
	decodeStructured(t, p.call("workspace_handoff", nil), &given)

	alice, bob := modernClient(t, p.url, testToken), modernClient(t, p.url, other)
	if text, isError := callTool(t, bob, "workspace_open", map[string]any{"handoff": given.Handle}); !isError || !strings.Contains(text, "not accepted") {
		t.Errorf("another principal taking the handoff: %s", text)
	}
	if text, isError := callTool(t, alice, "workspace_open", map[string]any{"handoff": given.Handle, "name": "both"}); !isError || !strings.Contains(text, "not both") {
		t.Errorf("handoff with a name: %s", text)
	}
	text, isError := callTool(t, alice, "workspace_open", map[string]any{"handoff": given.Handle})
	if isError || !strings.Contains(text, "running container") {
		t.Fatalf("workspace_open with the handoff: %s", text)
	}
	handle := text[strings.LastIndex(text, " ")+1:]
	if text, isError := callTool(t, alice, "read_file", map[string]any{"file_path": "given.txt", "workspace": handle}); isError || !strings.Contains(text, "from the 2025 session") {
		t.Errorf("the handed-over file under the handle: %s", text)
	}
	if text, isError := callTool(t, alice, "job", map[string]any{"action": "status", "id": job.Job, "workspace": handle}); isError || !strings.Contains(text, "running") {
		t.Errorf("the handed-over job under the handle: %s", text)
	}
	if text, _ := callTool(t, alice, "workspace_open", map[string]any{"handoff": given.Handle}); !strings.Contains(text, "not accepted") {
		t.Errorf("the handoff handle a second time: %s", text)
	}

	if text, isError := callTool(t, alice, "write_file", map[string]any{"file_path": "back.txt", "content": "from the handle", "workspace": handle}); isError {
		t.Fatalf("write_file: %s", text)
	}
	var req = map[string]any{"workspace": handle}
	text, isError = callTool(t, alice, "workspace_handoff", req)
	if isError {
		t.Fatalf("workspace_handoff under a handle: %s", text)
	}
	back := strings.Fields(strings.TrimPrefix(text, "handle "))[0]
	taker := p.sibling(map[string]string{"Authorization": "Bearer " + testToken}, "")
	decodeStructured(t, taker.call("workspace_attach", map[string]any{"handle": back}), &tools.WorkspaceAttachResult{})
	if got := taker.run("cat", "given.txt", "back.txt").Stdout; got != "from the 2025 sessionfrom the handle" {
		t.Errorf("the 2025 session that attached reads %q", got)
	}
	if c := taker.container(); c != home {
		t.Errorf("the workspace came back in container %s, not %s", c, home)
	}
	callTool(t, alice, "workspace_close", map[string]any{"workspace": handle})
}
