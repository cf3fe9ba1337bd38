package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

const testToken = "integration-token-0123456789abcdef"

// rawRequest sends one request as an MCP client would, with headers
// ("Host" sets the request's host), and returns the response; the caller
// closes its body.
func rawRequest(t *testing.T, method, url string, headers map[string]string, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// post sends a raw JSON-RPC body to an HTTP server and returns the status.
func post(t *testing.T, url string, headers map[string]string, body string) (int, string) {
	t.Helper()
	resp := rawRequest(t, "POST", url, headers, body)
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(b)
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`

func TestHTTPRefusesForeignHostsOriginsAndSessions(t *testing.T) {
	for _, tr := range []string{"http", "sse"} {
		t.Run(tr, func(t *testing.T) {
			p := launch(t, startOptions{transport: tr})
			target := p.url
			if tr == "sse" {
				target = strings.TrimSuffix(p.url, "/sse") + "/message?sessionId=wink-not-a-session"
			}
			tests := []struct {
				name    string
				headers map[string]string
				want    int
			}{
				{name: "foreign Origin", headers: map[string]string{"Origin": "http://evil.example"}, want: 403},
				{name: "null Origin", headers: map[string]string{"Origin": "null"}, want: 403},
				{name: "lookalike Origin", headers: map[string]string{"Origin": "http://localhost.evil.example"}, want: 403},
				{name: "foreign Host (DNS rebinding)", headers: map[string]string{"Host": "evil.example"}, want: 403},
				{name: "unknown session", headers: map[string]string{"Mcp-Session-Id": "wink-" + strings.Repeat("A", 43)}, want: 404},
				{name: "huge session id", headers: map[string]string{"Mcp-Session-Id": strings.Repeat("x", 10_000)}, want: 404},
			}
			for _, tt := range tests {
				if status, body := post(t, target, tt.headers, initializeBody); status != tt.want {
					t.Errorf("%s: status %d (%q), want %d", tt.name, status, body, tt.want)
				}
			}
			if got := containersNamed(t, p.prefix); len(got) != 0 {
				t.Errorf("refused requests created containers: %v", got)
			}
		})
	}
}

func TestHTTPTokenIsRequiredWhenSet(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokenFile, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tr := range []string{"http", "sse"} {
		t.Run(tr, func(t *testing.T) {
			p := launch(t, startOptions{transport: tr, args: []string{"--auth-token-file", tokenFile}})
			target := p.url
			if tr == "sse" {
				req, _ := http.NewRequest("GET", p.url, nil)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") == "" {
					t.Errorf("SSE stream without a token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
				}
			} else {
				for name, headers := range map[string]map[string]string{
					"missing":      nil,
					"wrong":        {"Authorization": "Bearer not-the-token-0123456789"},
					"wrong scheme": {"Authorization": "Basic " + testToken},
				} {
					if status, _ := post(t, target, headers, initializeBody); status != 401 {
						t.Errorf("%s token: status %d, want 401", name, status)
					}
				}
				if status, _ := post(t, target+"?token="+testToken, nil, initializeBody); status != 401 {
					t.Errorf("token in the query: status %d, want 401", status)
				}
			}
			p.connect(map[string]string{"Authorization": "Bearer " + testToken})
			if res := p.run("echo", "authorized"); res.Stdout != "authorized\n" {
				t.Errorf("with the token: %+v", res)
			}
			if strings.Contains(p.logs.String(), testToken) {
				t.Error("the token appears in the log")
			}
		})
	}
}

func TestHTTPOnAPublicAddressNeedsAToken(t *testing.T) {
	out, err := exec.Command(winkBin, "--transport", "http", "--addr", "0.0.0.0:0", "--cache-dir", t.TempDir()).CombinedOutput()
	if exitErr, ok := err.(*exec.ExitError); !ok || exitErr.ExitCode() != 2 || !strings.Contains(string(out), "without a bearer token") {
		t.Errorf("exit %v, output %q", err, out)
	}
}

// TestHTTPSessionsAreSeparateAndEndOnDelete connects two clients to one
// server: two sessions, two containers; DELETE of one removes only its own.
func TestHTTPSessionsAreSeparateAndEndOnDelete(t *testing.T) {
	p := start(t, startOptions{transport: "http"})
	other := &proc{t: t, transport: "http", url: p.url, logs: p.logs}
	other.connect(nil)
	a, b := p.container(), other.container()
	if a == b || !containerExists(t, a) || !containerExists(t, b) {
		t.Fatalf("containers %q and %q", a, b)
	}
	other.endSession() // DELETE
	if containerExists(t, b) {
		t.Errorf("container %s survived its session's DELETE", b)
	}
	if !containerExists(t, a) {
		t.Errorf("DELETE of one session removed the other's container %s", a)
	}
}

func TestHTTPSessionCap(t *testing.T) {
	p := start(t, startOptions{transport: "http", args: []string{"--max-sessions", "1"}})
	status, body := post(t, p.url, nil, initializeBody)
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "at most 1") {
		t.Errorf("second session: %d %q, want 503 naming the cap", status, body)
	}
	if res := p.run("echo", "first still served"); res.Stdout != "first still served\n" {
		t.Errorf("first session: %+v", res)
	}
}

// TestHTTPSessionIsNotIdleDuringACall runs a command for longer than the
// idle timeout over streamable HTTP: the call must finish and the session
// live on; once idle, the session ends. Session-less GETs never take the
// only session slot.
func TestHTTPSessionIsNotIdleDuringACall(t *testing.T) {
	t.Parallel() // it mostly waits: see the package doc
	p := start(t, startOptions{transport: "http", args: []string{"--idle-timeout", "4s", "--max-sessions", "2"}})
	for range 5 {
		resp := rawRequest(t, http.MethodGet, p.url, nil, "")
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("GET without a session: %d, want 400", resp.StatusCode)
		}
	}
	res := p.shell(map[string]any{"command": []string{"sh", "-c", "sleep 9; echo survived"}, "timeout_seconds": 20})
	if res.ExitCode != 0 || res.Stdout != "survived\n" {
		t.Fatalf("a 9 s call with a 4 s idle timeout: %+v", res)
	}
	if again := p.run("echo", "still here"); again.Stdout != "still here\n" {
		t.Fatalf("the session after the call: %+v", again)
	}
	if status, _ := post(t, p.url, nil, initializeBody); status != http.StatusOK {
		t.Errorf("a second session within the cap of 2: %d", status)
	}
	waitUntil(t, 30*time.Second, "the idle session to end", func() bool {
		return p.logs.find("http session expired", nil) != nil
	})
}

// TestHTTPThirtySessionsAtOnce opens 30 sessions at once against one
// server, each running commands and file tools, with no error.
func TestHTTPThirtySessionsAtOnce(t *testing.T) {
	p := launch(t, startOptions{transport: "http", args: unpooled})
	var wg sync.WaitGroup
	errs := make(chan error, 30)
	for i := range 30 {
		wg.Go(func() {
			c, err := client.NewStreamableHttpClient(p.url)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if _, err := ownFileRound(ctx, c, "load", i); err != nil {
				errs <- fmt.Errorf("session %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	waitUntil(t, 60*time.Second, "every session's container to go", func() bool { return len(containersNamed(t, p.prefix)) == 0 })
}

// ownFileRound initializes c as clientName (revision 2025-11-25) and
// runs session i's own-file round: write_file "session i" to mine.txt,
// podman_shell cat and read_file of it, each of which must see this
// session's content and no other's. It returns the container
// podman_shell names (a workspace Pod on Kubernetes).
func ownFileRound(ctx context.Context, c *client.Client, clientName string, i int) (string, error) {
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	init.Params.ClientInfo = mcp.Implementation{Name: clientName, Version: "0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		return "", fmt.Errorf("initialize: %w", err)
	}
	want := fmt.Sprintf("session %d", i)
	container := ""
	for _, call := range []struct {
		name string
		args map[string]any
	}{
		{"write_file", map[string]any{"file_path": "mine.txt", "content": want}},
		{"podman_shell", map[string]any{"command": []string{"cat", "mine.txt"}}},
		{"read_file", map[string]any{"file_path": "mine.txt"}},
	} {
		var req mcp.CallToolRequest
		req.Params.Name, req.Params.Arguments = call.name, call.args
		res, err := c.CallTool(ctx, req)
		if err == nil && res.IsError {
			err = errors.New(textOf(res))
		}
		if err == nil && call.name != "write_file" && !strings.Contains(fmt.Sprint(res.StructuredContent), want) {
			err = fmt.Errorf("read another session's file: %v", res.StructuredContent)
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", call.name, err)
		}
		if call.name == "podman_shell" {
			container, _ = res.StructuredContent.(map[string]any)["container"].(string)
		}
	}
	return container, nil
}

// TestTypeScriptSDKClientGetsASession drives the server with the official
// TypeScript SDK's default client: two clients, two sessions, two containers,
// each removed when its client ends its session.
func TestTypeScriptSDKClientGetsASession(t *testing.T) {
	script := filepath.Join("tsclient", "client.mjs")
	if _, err := os.Stat(filepath.Join("tsclient", "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the TypeScript SDK is not installed (run make setup): %v", err)
		}
		t.Skip("the TypeScript SDK is not installed; run make setup")
	}
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokenFile, []byte(testToken), 0o600); err != nil {
		t.Fatal(err)
	}
	profiles, _ := profilesFile(t, "profiles:\n  py:\n    description: Python\n    image: IMAGE\n  pyro:\n    description: more Python\n    image: IMAGE\n  node:\n    description: Node.js\n    image: IMAGE\n")
	p := launch(t, startOptions{transport: "http", args: []string{"--auth-token-file", tokenFile, "--profiles", profiles, "--no-builtin-profiles"}})
	type started struct {
		SessionID, Container, Protocol string
		Links, Logs, Completions       []string
		ProfileCompletions             []string
		Updated                        []string
		Tools, ToolsWithIcons          int
		ServerIcons                    int
		stdin                          io.WriteCloser
		cmd                            *exec.Cmd
	}
	var clients []*started
	for range 2 {
		cmd := exec.Command("node", script, p.url, testToken)
		cmd.Stderr = os.Stderr
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil {
			t.Fatalf("the TypeScript client printed nothing: %v\n%s", err, p.logs.String())
		}
		s := &started{stdin: stdin, cmd: cmd}
		if err := json.Unmarshal([]byte(line), s); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		clients = append(clients, s)
	}
	a, b := clients[0], clients[1]
	for _, c := range clients {
		if len(c.Links) != 1 || c.Links[0] != "wink://workspace/files/ts/links.txt" {
			t.Errorf("the TypeScript client got the links %q from write_file, want the file's", c.Links)
		}
		if !slices.Contains(c.Logs, "tool call") {
			t.Errorf("the TypeScript client heard the log messages %q, want its calls'", c.Logs)
		}
		if c.Tools == 0 || c.ToolsWithIcons != c.Tools || c.ServerIcons != 1 {
			t.Errorf("the TypeScript client saw %d tools, %d with an SVG icon, and %d server icons; want an icon for each", c.Tools, c.ToolsWithIcons, c.ServerIcons)
		}
		if !slices.Equal(c.Completions, []string{"ts/links.txt"}) {
			t.Errorf("completing the path ts/li gave %q, want ts/links.txt", c.Completions)
		}
		if !slices.Equal(c.ProfileCompletions, []string{"py", "pyro"}) {
			t.Errorf("completing the prompt's profile p gave %q, want py and pyro", c.ProfileCompletions)
		}
		if !slices.Contains(c.Updated, "wink://workspace/files/ts/shell.txt") {
			t.Errorf("the TypeScript client heard the updates %q, want the file its shell command wrote", c.Updated)
		}
	}
	if a.SessionID == "" || a.SessionID == b.SessionID || a.Container == b.Container || a.Protocol != mcp.ProtocolVersion20251125 || b.Protocol != mcp.ProtocolVersion20251125 {
		t.Fatalf("sessions %+v and %+v: want two sessions of 2025-11-25, as the 1.x SDK got before 2026-07-28 was served", a, b)
	}
	for _, c := range clients {
		if !containerExists(t, c.Container) {
			t.Errorf("container %s of session %.12s... does not exist", c.Container, c.SessionID)
		}
		_, _ = io.WriteString(c.stdin, "done\n")
		if err := c.cmd.Wait(); err != nil {
			t.Errorf("the TypeScript client failed: %v", err)
		}
		if containerExists(t, c.Container) {
			t.Errorf("container %s outlived its session", c.Container)
		}
	}
}
