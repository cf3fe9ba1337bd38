package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/tools"
)

func TestListsShellToolAndWorkspacePrompt(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr})
		ctx := context.Background()
		list, err := p.client.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var shell *mcp.Tool
		for i := range list.Tools {
			if list.Tools[i].Name == "podman_shell" {
				shell = &list.Tools[i]
			}
		}
		if shell == nil {
			t.Fatalf("tools/list lacks podman_shell: %+v", list.Tools)
		}
		if shell.InputSchema.Type != "object" || shell.InputSchema.Properties["command"] == nil {
			t.Errorf("podman_shell input schema %+v", shell.InputSchema)
		}
		prompts, err := p.client.ListPrompts(ctx, mcp.ListPromptsRequest{})
		if err != nil || len(prompts.Prompts) != 1 {
			t.Fatalf("prompts %+v, %v", prompts, err)
		}
		var get mcp.GetPromptRequest
		get.Params.Name = prompts.Prompts[0].Name
		got, err := p.client.GetPrompt(ctx, get)
		if err != nil {
			t.Fatal(err)
		}
		if text := got.Messages[0].Content.(mcp.TextContent).Text; !strings.Contains(text, "/workspace") || !strings.Contains(text, testImage) {
			t.Errorf("prompt text lacks /workspace or the image:\n%s", text)
		}
	})
}

func TestShellResults(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr})
		tests := []struct {
			name       string
			args       map[string]any
			wantCode   int
			wantStdout string
			wantStderr string
			wantCwd    string
		}{
			{name: "echo", args: map[string]any{"command": []string{"echo", "hi"}}, wantStdout: "hi\n", wantCwd: "/workspace"},
			{name: "exit code", args: map[string]any{"command": []string{"sh", "-c", "exit 3"}}, wantCode: 3},
			{name: "stderr", args: map[string]any{"command": []string{"sh", "-c", "echo err >&2"}}, wantStderr: "err\n"},
			{name: "env", args: map[string]any{"command": []string{"sh", "-c", "echo $GREETING"}, "env": map[string]string{"greeting": "hello"}}, wantStdout: "hello\n"},
			{name: "stdin with detach keys and NUL", args: map[string]any{"command": []string{"cat"}, "stdin": "a\x10\x11b\x00c\n"}, wantStdout: "a\x10\x11b\x00c\n"},
			{name: "cwd", args: map[string]any{"command": []string{"sh", "-c", "mkdir -p sub/dir && cd sub/dir && pwd"}}, wantStdout: "/workspace/sub/dir\n"},
			{name: "into cwd", args: map[string]any{"command": []string{"pwd"}, "cwd": "sub/dir"}, wantStdout: "/workspace/sub/dir\n", wantCwd: "/workspace/sub/dir"},
			{name: "killed by signal", args: map[string]any{"command": []string{"sh", "-c", "kill -9 $$"}}, wantCode: 137},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				res := p.shell(tt.args)
				if res.ExitCode != tt.wantCode || res.Stdout != tt.wantStdout || res.Stderr != tt.wantStderr {
					t.Errorf("exit %d stdout %q stderr %q; want %d %q %q", res.ExitCode, res.Stdout, res.Stderr, tt.wantCode, tt.wantStdout, tt.wantStderr)
				}
				if tt.wantCwd != "" && res.Cwd != tt.wantCwd {
					t.Errorf("cwd %q, want %q", res.Cwd, tt.wantCwd)
				}
			})
		}
	})
}

func TestCommandsThatCannotStartAreToolErrors(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr})
		p.run("sh", "-c", "printf 'echo hi' > script.sh && mkdir adir")
		tests := []struct {
			name string
			args map[string]any
			want string
		}{
			{name: "not found", args: map[string]any{"command": []string{"no-such-tool"}}, want: `cannot run "no-such-tool": command not found in PATH`},
			{name: "not executable", args: map[string]any{"command": []string{"./script.sh"}}, want: "permission denied"},
			{name: "missing cwd", args: map[string]any{"command": []string{"true"}, "cwd": "nope"}, want: `cwd "nope" does not exist`},
			{name: "cwd is a file", args: map[string]any{"command": []string{"true"}, "cwd": "script.sh"}, want: "not a directory"},
			{name: "timeout out of range", args: map[string]any{"command": []string{"true"}, "timeout_seconds": 1801}, want: "timeout_seconds: must be at most 1800 (got 1801)"},
			{name: "cwd outside", args: map[string]any{"command": []string{"true"}, "cwd": "../etc"}, want: "leaves the workspace"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				res := p.call("podman_shell", tt.args)
				if !res.IsError || !strings.Contains(textOf(res), tt.want) {
					t.Errorf("got %q (isError %v), want an error containing %q", textOf(res), res.IsError, tt.want)
				}
			})
		}
		if res := p.run("echo", "still", "fine"); res.Stdout != "still fine\n" {
			t.Errorf("the session broke after errors: %+v", res)
		}
	})
}

func TestTimeoutKillsTheWholeTree(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr})
		p.container()
		begin := time.Now()
		res := p.shell(map[string]any{
			"command":         []string{"sh", "-c", "setsid sleep 301 & sleep 302 & sleep 30"},
			"timeout_seconds": 1,
		})
		elapsed := time.Since(begin)
		if !res.TimedOut || res.ExitCode != 124 {
			t.Errorf("timed_out %v exit %d, want true 124", res.TimedOut, res.ExitCode)
		}
		if elapsed > 3*time.Second {
			t.Errorf("a 1 s timeout returned after %s, want under 3 s", elapsed)
		}
		assertNoProcesses(t, p, "sleep")
	})
}

func TestBackgroundProcessesDoNotOutliveTheirCall(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr})
		res := p.run("sh", "-c", "setsid sleep 303 & (sleep 304 &) ; echo started")
		if res.ExitCode != 0 || res.Stdout != "started\n" {
			t.Errorf("got %+v", res)
		}
		assertNoProcesses(t, p, "sleep")
	})
}

// assertNoProcesses lists the container's processes and fails if any runs name.
func assertNoProcesses(t *testing.T, p *proc, name string) {
	t.Helper()
	ps := p.run("ps", "-o", "pid,ppid,args")
	for _, line := range strings.Split(ps.Stdout, "\n") {
		if strings.Contains(line, name) {
			t.Errorf("process left in the container: %q\n%s", line, ps.Stdout)
		}
	}
}

func TestOutputIsCappedAndCounted(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr})
		res := p.run("sh", "-c", "head -c 1048576 /dev/zero | tr '\\0' a; head -c 100 /dev/zero >&2")
		want := strings.Repeat("a", tools.MaxOutputBytes) + "\n" + tools.TruncatedMarker
		if res.Stdout != want {
			t.Errorf("stdout is %d bytes ending %q, want 32 KiB then the marker", len(res.Stdout), res.Stdout[max(0, len(res.Stdout)-20):])
		}
		if res.StdoutBytes != 1<<20 || res.StderrBytes != 100 {
			t.Errorf("byte counts %d / %d, want 1048576 / 100", res.StdoutBytes, res.StderrBytes)
		}
		quiet := p.shell(map[string]any{"command": []string{"echo", "hidden"}, "capture_output": false})
		if quiet.Stdout != tools.NotCapturedNote || quiet.StdoutBytes != 7 {
			t.Errorf("capture off: stdout %q, %d bytes", quiet.Stdout, quiet.StdoutBytes)
		}
	})
}

// TestConcurrentFirstCallsMakeOneContainer fires several first calls at a
// new session at once.
func TestConcurrentFirstCallsMakeOneContainer(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr, args: unpooled})
		results := make(chan *mcp.CallToolResult, 5)
		for i := range 5 {
			go func() {
				var req mcp.CallToolRequest
				req.Params.Name = "podman_shell"
				req.Params.Arguments = map[string]any{"command": []string{"echo", fmt.Sprint(i)}}
				res, err := p.client.CallTool(context.Background(), req)
				if err != nil {
					res = mcp.NewToolResultError(err.Error())
				}
				results <- res
			}()
		}
		for range 5 {
			if res := <-results; res.IsError {
				t.Errorf("call failed: %s", textOf(res))
			}
		}
		if got := containersNamed(t, p.prefix); len(got) != 1 {
			t.Errorf("containers %v, want exactly one", got)
		}
		if n := p.logs.count("created"); n != 1 {
			t.Errorf("%d created events, want 1", n)
		}
	})
}

// TestStdoutCarriesOnlyJSONRPC reads the server's stdout raw while it logs at
// debug level and runs a chatty command.
func TestStdoutCarriesOnlyJSONRPC(t *testing.T) {
	lines, logs := rawSession(t, []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"podman_shell","arguments":{"command":["sh","-c","seq 1 2000; echo to-stderr >&2"]}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"podman_shell","arguments":{"command":["true"],"bogus":1}}}`,
	}, 4)
	for i, line := range lines {
		var msg map[string]any
		if err := json.Unmarshal([]byte(line), &msg); err != nil || msg["jsonrpc"] != "2.0" {
			t.Errorf("stdout line %d is not JSON-RPC: %q", i, line)
		}
	}
	// The lifecycle as the log tells it, each event exactly once.
	for _, event := range []string{"created", "started", "ready", "removed"} {
		if n := logs.count(event); n != 1 {
			t.Errorf("%d %s events, want 1", n, event)
		}
	}
}

// TestCancellationKillsTheCommand cancels a running call the way each
// transport does (notifications/cancelled over stdio and SSE, the request
// aborted over streamable HTTP) and checks the command is killed within 2 s.
func TestCancellationKillsTheCommand(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr})
		dir := p.sessionDir()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		const requestID = 9001
		go func() {
			if tr == "sse" {
				// mcp-go's client sends no cancellation over HTTP transports;
				// send the call, and below the notification, by hand.
				_, err := p.client.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{
					JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(requestID)), Method: "tools/call",
					Params: map[string]any{"name": "podman_shell", "arguments": map[string]any{"command": []string{"sh", "-c", "touch started; sleep 305"}}},
				})
				done <- err
				return
			}
			_, err := p.client.CallTool(ctx, shellRequest("sh", "-c", "touch started; sleep 305"))
			done <- err
		}()
		started := dir + "/workspace/started"
		waitUntil(t, 10*time.Second, "the command to start", func() bool { return fileExists(started) })
		if tr == "sse" {
			err := p.client.GetTransport().SendNotification(context.Background(), mcp.JSONRPCNotification{
				JSONRPC:      mcp.JSONRPC_VERSION,
				Notification: mcp.Notification{Method: "notifications/cancelled", Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": requestID}}},
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		cancel()
		<-done
		waitUntil(t, 2*time.Second, "the cancelled command to die", func() bool {
			return !strings.Contains(p.run("ps", "-o", "args").Stdout, "sleep 305")
		})
	})
}

// TestProgressDuringALongCommand asks for progress on a 12-second command
// and expects notifications at least every 5 s, carrying its output.
func TestProgressDuringALongCommand(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr})
		p.container() // the gaps measured are the command's, not the container's making
		var mu sync.Mutex
		var seen []mcp.JSONRPCNotification
		var at []time.Time // when each call event happened: start, notifications, answer
		p.client.OnNotification(func(n mcp.JSONRPCNotification) {
			if n.Method == "notifications/progress" {
				mu.Lock()
				seen, at = append(seen, n), append(at, time.Now())
				mu.Unlock()
			}
		})
		req := shellRequest("sh", "-c", "for i in 1 2 3 4 5 6; do echo step $i; sleep 2; done")
		req.Params.Meta = &mcp.Meta{ProgressToken: "job-1"}
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
		res, err := p.client.CallTool(context.Background(), req)
		if err != nil || res.IsError {
			t.Fatalf("call: %v %v", err, res)
		}
		mu.Lock()
		defer mu.Unlock()
		at = append(at, time.Now())
		for i := 1; i < len(at); i++ {
			if gap := at[i].Sub(at[i-1]); gap > 5*time.Second {
				t.Errorf("%s without a progress notification during a 12 s command, want one at least every 5 s (%d in all)", gap.Round(time.Millisecond), len(seen))
			}
		}
		var last float64
		for _, n := range seen {
			f := n.Params.AdditionalFields
			progress, _ := f["progress"].(float64)
			message, _ := f["message"].(string)
			if f["progressToken"] != "job-1" || progress <= last || !strings.HasPrefix(message, "step ") {
				t.Errorf("notification %v: want token job-1, increasing progress, a step line", f)
			}
			last = progress
		}
	})
}
