package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/workspace"
)

func newShell(t *testing.T, ws *fakeShell) server.ServerTool {
	t.Helper()
	tool, err := Shell(func(context.Context) (any, error) { return ws, nil }, slog.New(slog.DiscardHandler), DefaultMaxCommandTimeout)
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

// call runs a tool handler on raw JSON arguments, as mcp-go would.
func call(t *testing.T, tool server.ServerTool, args string) *mcp.CallToolResult {
	t.Helper()
	var req mcp.CallToolRequest
	req.Params.Name = tool.Tool.Name
	req.Params.RawArguments = json.RawMessage(args)
	res, err := tool.Handler(context.Background(), req)
	if err != nil {
		t.Fatalf("handler returned a Go error: %v", err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	return res.Content[0].(mcp.TextContent).Text
}

func TestShellArgumentLimits(t *testing.T) {
	cmd := func(argv ...string) string {
		b, _ := json.Marshal(argv)
		return `"command":` + string(b)
	}
	args := func(parts ...string) string { return "{" + strings.Join(parts, ",") + "}" }
	envOf := func(n int, value string) string {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf("V%d", i)] = value
		}
		b, _ := json.Marshal(m)
		return `"env":` + string(b)
	}
	str := func(name string, v string) string {
		b, _ := json.Marshal(v)
		return fmt.Sprintf("%q:%s", name, b)
	}
	tests := []struct {
		name    string
		args    string
		wantErr string
	}{
		{name: "plain", args: args(cmd("echo", "hi"))},
		{name: "no command", args: `{}`, wantErr: "command: is required when action is exec"},
		{name: "empty command", args: `{"command":[]}`, wantErr: "command: must have at least 1 items"},
		{name: "blank executable", args: args(cmd("  ")), wantErr: "command[0]: must name the executable"},
		{name: "empty executable", args: args(cmd("")), wantErr: "command[0]: must name the executable"},
		{name: "NUL in argument", args: args(cmd("echo", "a\x00b")), wantErr: "command[1]: must be ASCII without NUL"},
		{name: "non-ASCII argument", args: args(cmd("echo", "café")), wantErr: "command[1]: must be ASCII"},
		{name: "command of 4096 bytes", args: args(cmd("echo", strings.Repeat("a", 4092)))},
		{name: "command of 4097 bytes", args: args(cmd("echo", strings.Repeat("a", 4093))), wantErr: "command: is 4097 bytes in all; the limit is 4096"},
		{name: "command as a string", args: `{"command":"echo hi"}`, wantErr: "command: must be array (got string)"},
		{name: "timeout 1", args: args(cmd("true"), `"timeout_seconds":1`)},
		{name: "timeout 120", args: args(cmd("true"), `"timeout_seconds":120`)},
		{name: "timeout 0", args: args(cmd("true"), `"timeout_seconds":0`), wantErr: "timeout_seconds: must be at least 1 (got 0)"},
		{name: "timeout past the maximum", args: args(cmd("true"), `"timeout_seconds":1801`), wantErr: "timeout_seconds: must be at most 1800 (got 1801)"},
		{name: "grace 31", args: args(cmd("true"), `"grace_seconds":31`), wantErr: "grace_seconds: must be at most 30"},
		{name: "grace negative", args: args(cmd("true"), `"grace_seconds":-1`), wantErr: "grace_seconds: must be at least 0"},
		{name: "background for start", args: `{"action":"start","background":true}`, wantErr: "background and grace_seconds: only for action exec"},
		{name: "background without capture", args: args(cmd("true"), `"background":true,"capture_output":false`), wantErr: "capture_output: a background job always keeps its output"},
		{name: "background not a bool", args: args(cmd("true"), `"background":"yes"`), wantErr: "background"},
		{name: "timeout -1", args: args(cmd("true"), `"timeout_seconds":-1`), wantErr: "timeout_seconds: must be at least 1 (got -1)"},
		{name: "timeout 1.5", args: args(cmd("true"), `"timeout_seconds":1.5`), wantErr: "timeout_seconds: must be integer (got number)"},
		{name: "timeout as string", args: args(cmd("true"), `"timeout_seconds":"10"`), wantErr: "timeout_seconds: must be integer (got string)"},
		{name: "timeout null", args: args(cmd("true"), `"timeout_seconds":null`), wantErr: "timeout_seconds: must be integer (got null)"},
		{name: "timeout 1e309", args: args(cmd("true"), `"timeout_seconds":1e309`), wantErr: "timeout_seconds: must be at most 1800"},
		{name: "stdin of 48000 characters", args: args(cmd("cat"), str("stdin", strings.Repeat("a", 48000)))},
		{name: "stdin of 48000 euro signs", args: args(cmd("cat"), str("stdin", strings.Repeat("€", 48000)))},
		{name: "stdin of 48001 characters", args: args(cmd("cat"), str("stdin", strings.Repeat("a", 48001))), wantErr: "stdin: must be at most 48000 characters long (got 48001)"},
		{name: "stdin of 48001 emoji", args: args(cmd("cat"), str("stdin", strings.Repeat("😀", 48001))), wantErr: "stdin: must be at most 48000 characters long (got 48001)"},
		{name: "64 env entries", args: args(cmd("true"), envOf(64, "x"))},
		{name: "65 env entries", args: args(cmd("true"), envOf(65, "x")), wantErr: "env: must have at most 64 entries (got 65)"},
		{name: "env value of 512", args: args(cmd("true"), envOf(1, strings.Repeat("v", 512)))},
		{name: "env value of 513", args: args(cmd("true"), envOf(1, strings.Repeat("v", 513))), wantErr: "env.V0: must be at most 512 characters long (got 513)"},
		{name: "non-ASCII env value", args: args(cmd("true"), `"env":{"A":"é"}`), wantErr: "env.A: must be ASCII"},
		{name: "empty env key", args: args(cmd("true"), `"env":{"":"x"}`), wantErr: `env: the key "" must be a variable name`},
		{name: "env key with =", args: args(cmd("true"), `"env":{"A=B":"x"}`), wantErr: `env: the key "A=B" must be a variable name`},
		{name: "env key starting with a digit", args: args(cmd("true"), `"env":{"1X":"x"}`), wantErr: `env: the key "1X" must be a variable name`},
		{name: "env keys equal once uppercased", args: args(cmd("true"), `"env":{"a":"1","A":"2"}`), wantErr: "are the same once uppercased"},
		{name: "cwd inside", args: args(cmd("true"), `"cwd":"src/./lib/"`)},
		{name: "cwd absolute", args: args(cmd("true"), `"cwd":"/etc"`), wantErr: `cwd: path "/etc": is absolute`},
		{name: "cwd escaping", args: args(cmd("true"), `"cwd":"../x"`), wantErr: "cwd: path \"../x\": leaves the workspace"},
		{name: "cwd with 17 segments", args: args(cmd("true"), str("cwd", strings.Repeat("d/", 17))), wantErr: "more than 16 segments"},
		{name: "action start without command", args: `{"action":"start"}`},
		{name: "unknown action", args: `{"action":"restart"}`, wantErr: "action: must be one of exec, start, stop (got restart)"},
		{name: "unknown field", args: args(cmd("true"), `"timeout":5`), wantErr: "timeout: unknown field"},
		{name: "duplicate key", args: args(cmd("true"), cmd("false")), wantErr: "command: the key appears more than once"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := &fakeShell{}
			res := call(t, newShell(t, ws), tt.args)
			if tt.wantErr == "" {
				if res.IsError {
					t.Fatalf("rejected: %s", text(res))
				}
				return
			}
			if !res.IsError || !strings.Contains(text(res), tt.wantErr) {
				t.Errorf("got %q (isError %v), want an error containing %q", text(res), res.IsError, tt.wantErr)
			}
			if len(ws.execs) != 0 {
				t.Error("a rejected call reached the workspace")
			}
		})
	}
}

func TestShellPassesNormalisedRequest(t *testing.T) {
	ws := &fakeShell{fakeCommands: fakeCommands{result: workspace.ExecResult{Dir: "/workspace/src", Stdout: "hi\n", StdoutBytes: 3}}}
	res := call(t, newShell(t, ws), `{"command":["echo","hi"],"cwd":"./src/","env":{"lower":"1"},"stdin":"in","timeout_seconds":7}`)
	if res.IsError {
		t.Fatal(text(res))
	}
	got := ws.execs[0]
	if got.Dir != "src" || got.Env["LOWER"] != "1" || got.Stdin != "in" || got.Timeout != 7*time.Second || !got.Capture || got.OutputLimit != MaxOutputBytes {
		t.Errorf("request %+v", got)
	}
	sr := res.StructuredContent.(ShellResult)
	if sr.Stdout != "hi\n" || sr.Cwd != "/workspace/src" || sr.Container != "wink-test" || sr.Action != ActionExec {
		t.Errorf("result %+v", sr)
	}
	if def := call(t, newShell(t, ws), `{"command":["true"]}`); def.IsError || ws.execs[1].Timeout != 30*time.Second {
		t.Errorf("default timeout = %v", ws.execs[1].Timeout)
	}
}

func TestShellResultRendering(t *testing.T) {
	tests := []struct {
		name       string
		args       string
		result     workspace.ExecResult
		wantStdout string
		wantText   []string
	}{
		{name: "truncated", args: `{"command":["yes"]}`,
			result:     workspace.ExecResult{Stdout: "y\ny\n", StdoutBytes: 1 << 20, StdoutTruncated: true},
			wantStdout: "y\ny\n[truncated]", wantText: []string{"stdout (1048576 bytes)", "[truncated]"}},
		{name: "truncated mid-line", args: `{"command":["yes"]}`,
			result:     workspace.ExecResult{Stdout: "yy", StdoutBytes: 9, StdoutTruncated: true},
			wantStdout: "yy\n[truncated]"},
		{name: "not captured", args: `{"command":["echo","x"],"capture_output":false}`,
			result:     workspace.ExecResult{StdoutBytes: 2},
			wantStdout: NotCapturedNote},
		{name: "timed out", args: `{"command":["sleep","9"]}`,
			result:   workspace.ExecResult{ExitCode: 124, TimedOut: true, DurationMillis: 1003},
			wantText: []string{"timed out after 1003 ms", "exit 124"}},
		{name: "exit status", args: `{"command":["false"]}`,
			result:   workspace.ExecResult{ExitCode: 1, Dir: "/workspace"},
			wantText: []string{"exit 1 in 0 ms (cwd /workspace)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, newShell(t, &fakeShell{fakeCommands: fakeCommands{result: tt.result}}), tt.args)
			if res.IsError {
				t.Fatal(text(res))
			}
			sr := res.StructuredContent.(ShellResult)
			if tt.wantStdout != "" && sr.Stdout != tt.wantStdout {
				t.Errorf("stdout = %q, want %q", sr.Stdout, tt.wantStdout)
			}
			for _, w := range tt.wantText {
				if !strings.Contains(text(res), w) {
					t.Errorf("text %q lacks %q", text(res), w)
				}
			}
		})
	}
}

func TestShellActions(t *testing.T) {
	ws := &fakeShell{}
	if res := call(t, newShell(t, ws), `{"action":"start"}`); res.IsError || ws.starts != 1 || !strings.Contains(text(res), "wink-test is running") {
		t.Errorf("start: %q, %d starts", text(res), ws.starts)
	}
	if res := call(t, newShell(t, ws), `{"action":"stop"}`); res.IsError || ws.resets != 1 || !strings.Contains(text(res), "removed") {
		t.Errorf("stop: %q, %d resets", text(res), ws.resets)
	}
	if len(ws.execs) != 0 {
		t.Error("start or stop ran a command")
	}
}

func TestShellWorkspaceErrorIsToolError(t *testing.T) {
	ws := &fakeShell{fakeCommands: fakeCommands{recorder: recorder{err: errors.New(`cannot run "nope": command not found in PATH (/bin)`)}}}
	res := call(t, newShell(t, ws), `{"command":["nope"]}`)
	if !res.IsError || !strings.Contains(text(res), "command not found") {
		t.Errorf("got %q (isError %v)", text(res), res.IsError)
	}
}

// workspace_port names the missing or misplaced port, and opens through
// the workspace.
func TestWorkspacePortArguments(t *testing.T) {
	ws := &fakePorts{}
	tool, err := WorkspacePort(func(context.Context) (any, error) { return ws, nil })
	if err != nil {
		t.Fatal(err)
	}
	for args, want := range map[string]string{
		`{"action":"open"}`:              "port: is required when action is open",
		`{"action":"close"}`:             "port: is required when action is close",
		`{"action":"list","port":80}`:    "list takes no port",
		`{"action":"open","port":70000}`: "port",
		`{"action":"open","port":0}`:     "port",
		`{"action":"peek","port":80}`:    "action",
	} {
		res := call(t, tool, args)
		if !res.IsError || !strings.Contains(text(res), want) {
			t.Errorf("%s: %v %q; want an error naming %q", args, res.IsError, text(res), want)
		}
	}
	res := call(t, tool, `{"action":"open","port":8000}`)
	if res.IsError || !strings.Contains(text(res), "http://127.0.0.1:1/") || ws.calls[len(ws.calls)-1] != "open port 8000" {
		t.Errorf("open: %q, calls %v", text(res), ws.calls)
	}
}
