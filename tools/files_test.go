package tools

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/workspace"
)

// toolsOn builds every tool on one fake workspace, by name; a tool whose
// interface ws lacks answers every call with an error.
func toolsOn(t *testing.T, ws any) map[string]server.ServerTool {
	t.Helper()
	all, err := All(func(context.Context) (any, error) { return ws, nil }, slog.New(slog.DiscardHandler), Options{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]server.ServerTool{}
	for _, tool := range all {
		byName[tool.Tool.Name] = tool
	}
	return byName
}

// pathArgs says, for each tool with a path argument, how to build its arguments.
var pathArgs = map[string]func(p string) map[string]any{
	"ls":         func(p string) map[string]any { return map[string]any{"path": p} },
	"read_file":  func(p string) map[string]any { return map[string]any{"file_path": p} },
	"write_file": func(p string) map[string]any { return map[string]any{"file_path": p, "content": "x"} },
	"edit_file": func(p string) map[string]any {
		return map[string]any{"file_path": p, "old_string": "a", "new_string": "b"}
	},
	"glob":         func(p string) map[string]any { return map[string]any{"pattern": "*", "path": p} },
	"grep":         func(p string) map[string]any { return map[string]any{"pattern": "x", "path": p} },
	"rm":           func(p string) map[string]any { return map[string]any{"path": p} },
	"podman_shell": func(p string) map[string]any { return map[string]any{"command": []string{"true"}, "cwd": p} },
	"evaluate_python": func(p string) map[string]any {
		return map[string]any{"code": "1", "reads": []map[string]string{{"path": p}}}
	},
	"workspace_changes": func(p string) map[string]any { return map[string]any{"path": p} },
	"workspace_diff":    func(p string) map[string]any { return map[string]any{"path": p} },
}

func callArgs(t *testing.T, tool server.ServerTool, args map[string]any) (string, bool) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	res := call(t, tool, string(raw))
	return text(res), res.IsError
}

// TestPathRulesOnEveryTool runs one table of path cases against every path
// argument of every tool: each tool gives the same answer.
func TestPathRulesOnEveryTool(t *testing.T) {
	seg80, seg81 := strings.Repeat("a", 80), strings.Repeat("a", 81)
	cases := []struct {
		name    string
		path    string
		wantErr string
	}{
		{name: "plain", path: "dir/file.txt"},
		{name: "16 segments", path: strings.TrimSuffix(strings.Repeat("d/", 16), "/")},
		{name: "80 characters", path: seg80},
		{name: "17 segments", path: strings.Repeat("d/", 16) + "e", wantErr: "more than 16 segments"},
		{name: "81 characters", path: seg81, wantErr: "the limit is 80"},
		{name: "absolute", path: "/etc/passwd", wantErr: "is absolute"},
		{name: "workspace prefix", path: "/workspace/a.txt", wantErr: `use "a.txt"`},
		{name: "parent", path: "../x", wantErr: "leaves the workspace"},
		{name: "NUL", path: "a\x00b", wantErr: "control character 0x00"},
		{name: "newline", path: "a\nb", wantErr: "control character 0x0a"},
		{name: "non-ASCII", path: "café", wantErr: "U+00E9"},
		{name: "too long", path: strings.Repeat("a/", 700), wantErr: "must be at most 1295 characters"},
	}
	for name, build := range pathArgs {
		for _, tc := range cases {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				ws := newFakeSession()
				msg, isErr := callArgs(t, toolsOn(t, ws)[name], build(tc.path))
				if tc.wantErr == "" {
					if isErr {
						t.Errorf("rejected: %s", msg)
					}
					return
				}
				if !isErr || !strings.Contains(msg, tc.wantErr) {
					t.Errorf("got %q (isError %v), want an error containing %q", msg, isErr, tc.wantErr)
				}
				if ws.reached() != 0 {
					t.Error("a rejected call reached the workspace")
				}
			})
		}
	}
}

func TestFileToolLimits(t *testing.T) {
	tests := []struct {
		tool    string
		args    map[string]any
		wantErr string
	}{
		{tool: "read_file", args: map[string]any{"file_path": ""}, wantErr: "file_path: must name a file, not the workspace root"},
		{tool: "read_file", args: map[string]any{"file_path": "a", "limit": 2000}},
		{tool: "read_file", args: map[string]any{"file_path": "a", "limit": 2001}, wantErr: "limit: must be at most 2000 (got 2001)"},
		{tool: "read_file", args: map[string]any{"file_path": "a", "limit": 0}, wantErr: "limit: must be at least 1 (got 0)"},
		{tool: "read_file", args: map[string]any{"file_path": "a", "offset": -1}, wantErr: "offset: must be at least 0 (got -1)"},
		{tool: "write_file", args: map[string]any{"file_path": "a", "content": strings.Repeat("a", 48000)}},
		{tool: "write_file", args: map[string]any{"file_path": "a", "content": strings.Repeat("😀", 48000)}},
		{tool: "write_file", args: map[string]any{"file_path": "a", "content": strings.Repeat("a", 48001)}, wantErr: "content: is 48001 characters; the limit is 48000"},
		{tool: "write_file", args: map[string]any{"file_path": "a", "content": "not base64!", "encoding": "base64"}, wantErr: "content: is not standard base64"},
		{tool: "write_file", args: map[string]any{"file_path": "a", "content": strings.Repeat("AAAA", 699051), "encoding": "base64"}, wantErr: "content: decodes to 2097153 bytes; the limit of a base64 write is 2097152"},
		{tool: "write_file", args: map[string]any{"file_path": "a", "content": "", "encoding": "hex"}, wantErr: "encoding"},
		{tool: "read_file", args: map[string]any{"file_path": "a", "encoding": "base64", "offset": 3}, wantErr: "a base64 read takes byte_offset and byte_limit"},
		{tool: "read_file", args: map[string]any{"file_path": "a", "byte_offset": 3}, wantErr: "byte_offset and byte_limit: only with encoding base64"},
		{tool: "read_file", args: map[string]any{"file_path": "a", "encoding": "base64", "byte_limit": 2097153}, wantErr: "byte_limit: must be at most 2097152"},
		{tool: "read_file", args: map[string]any{"file_path": "a", "encoding": "base64", "byte_offset": -1}, wantErr: "byte_offset: must be at least 0"},
		{tool: "write_file", args: map[string]any{"file_path": "a"}, wantErr: "content: is required"},
		{tool: "write_file", args: map[string]any{"file_path": ".", "content": ""}, wantErr: "not the workspace root"},
		{tool: "edit_file", args: map[string]any{"file_path": "a", "old_string": "", "new_string": "b"}, wantErr: "old_string: must be at least 1 characters long (got 0)"},
		{tool: "edit_file", args: map[string]any{"file_path": "a", "old_string": "a", "new_string": strings.Repeat("b", 48001)}, wantErr: "new_string: must be at most 48000"},
		{tool: "rm", args: map[string]any{"path": ""}, wantErr: "refusing to remove the workspace root"},
		{tool: "rm", args: map[string]any{"path": "./"}, wantErr: "refusing to remove the workspace root"},
		{tool: "rm", args: map[string]any{"path": "a/.."}, wantErr: "refusing to remove the workspace root"},
		{tool: "glob", args: map[string]any{"pattern": "["}, wantErr: `pattern: segment "[" is not a valid pattern`},
		{tool: "glob", args: map[string]any{"pattern": "/etc/*"}, wantErr: "pattern: the pattern is absolute"},
		{tool: "glob", args: map[string]any{"pattern": "**/../../*"}, wantErr: `pattern: ".." is not allowed`},
		{tool: "glob", args: map[string]any{"pattern": strings.Repeat("*", 1025)}, wantErr: "pattern: must be at most 1024 characters"},
		{tool: "glob", args: map[string]any{"pattern": strings.Repeat("{a,b}", 30)}},
		{tool: "grep", args: map[string]any{"pattern": "(a+)+$"}},
		{tool: "grep", args: map[string]any{"pattern": "(unclosed"}, wantErr: "pattern: not a valid RE2 regular expression: error parsing regexp: missing closing )"},
		{tool: "grep", args: map[string]any{"pattern": `(a)\1`}, wantErr: "pattern: not a valid RE2 regular expression"},
		{tool: "grep", args: map[string]any{"pattern": strings.Repeat("(", 1001) + strings.Repeat(")", 1001)}, wantErr: "expression nests too deeply"},
		{tool: "grep", args: map[string]any{"pattern": "x", "glob": "[a-"}, wantErr: "glob: segment"},
		{tool: "evaluate_python", args: map[string]any{"code": strings.Repeat("1", 2000)}},
		{tool: "evaluate_python", args: map[string]any{"code": strings.Repeat("1", 2001)}, wantErr: "code: must be at most 2000 characters long (got 2001)"},
		{tool: "evaluate_python", args: map[string]any{"code": "x", "globals": map[string]string{"n": "not json"}}, wantErr: `globals.n: "not json" is not JSON`},
		{tool: "evaluate_python", args: map[string]any{"code": "x", "globals": map[string]string{"reads": "1"}}, wantErr: "globals.reads: the name is reserved"},
		{tool: "evaluate_python", args: map[string]any{"code": "x", "globals": map[string]string{"1x": "1"}}, wantErr: `globals: the key "1x" must be a variable name`},
		{tool: "evaluate_python", args: map[string]any{"code": "x", "writes": []map[string]string{{"path": "a", "content": "b", "mode": "replace"}}}, wantErr: "writes[0].mode: must be one of create, overwrite, append"},
	}
	for _, tt := range tests {
		t.Run(tt.tool+"/"+tt.wantErr, func(t *testing.T) {
			msg, isErr := callArgs(t, toolsOn(t, newFakeSession())[tt.tool], tt.args)
			if tt.wantErr == "" {
				if isErr {
					t.Errorf("rejected: %s", msg)
				}
				return
			}
			if !isErr || !strings.Contains(msg, tt.wantErr) {
				t.Errorf("got %q (isError %v), want an error containing %q", msg, isErr, tt.wantErr)
			}
		})
	}
}

func TestFileToolRequestsAndRenderings(t *testing.T) {
	ws := &fakeFiles{
		list: workspace.ListResult{Path: "src", Total: 3, Entries: []workspace.Entry{
			{Name: "lib", Kind: workspace.KindDirectory, Modified: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)},
			{Name: "a.go", Kind: workspace.KindFile, SizeBytes: 12},
			{Name: "out", Kind: workspace.KindSymlink, LinkTarget: "/etc"},
		}},
		read: workspace.ReadResult{Content: "one\r\ntwo\n", Limit: 2, TotalLines: 5312, Truncated: true},
		grep: workspace.GrepResult{Matches: []workspace.GrepMatch{{Path: "a.go", LineNumber: 3, Line: "func main()"}}, FilesSearched: 4, FilesSkipped: 1},
	}
	tools := toolsOn(t, ws)
	tests := []struct {
		tool string
		args map[string]any
		want []string
	}{
		{tool: "ls", args: map[string]any{"path": "src/"}, want: []string{"3 entries in src", "2026-01-02 03:04  lib/", "12", "a.go", "out -> /etc"}},
		{tool: "read_file", args: map[string]any{"file_path": "./f.txt", "offset": 10}, want: []string{"lines 11-12 of 5312 in f.txt (read more with offset 12)", "    11\tone\n    12\ttwo"}},
		{tool: "write_file", args: map[string]any{"file_path": "n.txt", "content": "abc"}, want: []string{"created n.txt (3 bytes, version 1)"}},
		{tool: "edit_file", args: map[string]any{"file_path": "n.txt", "old_string": "a", "new_string": "b"}, want: []string{"replaced 1 occurrence(s) in n.txt"}},
		{tool: "grep", args: map[string]any{"pattern": "main"}, want: []string{"1 matches in 4 files searched (1 binary or large files skipped)", "a.go:3: func main()"}},
		{tool: "rm", args: map[string]any{"path": "d/"}, want: []string{"removed d (1 entries)"}},
	}
	for _, tt := range tests {
		msg, isErr := callArgs(t, tools[tt.tool], tt.args)
		if isErr {
			t.Errorf("%s failed: %s", tt.tool, msg)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s text %q lacks %q", tt.tool, msg, w)
			}
		}
	}
	if strings.Join(ws.calls, ",") != "ls src,read f.txt,write n.txt,rm d" {
		t.Errorf("calls %v (paths normalised?)", ws.calls)
	}
	if ws.edits[0].Path != "n.txt" || ws.edits[0].Old != "a" || ws.greps[0].Path != "" {
		t.Errorf("edits %+v greps %+v", ws.edits, ws.greps)
	}
}

func TestPythonRequestAndRendering(t *testing.T) {
	value := "42"
	ws := &fakePython{pyRes: workspace.PythonResult{ValueRepr: &value, Stdout: "hi\n", Ok: true,
		Writes: []workspace.WriteOutcome{{Path: "o.txt", Mode: "create", SizeBytes: 2, Applied: true}, {Path: "x", Mode: "overwrite", Error: "does not exist"}}}}
	msg, isErr := callArgs(t, toolsOn(t, ws)["evaluate_python"], map[string]any{
		"code": "6*7", "globals": map[string]string{"n": "1"}, "reads": []map[string]string{{"path": "./in.txt"}},
		"writes": []map[string]string{{"path": "o.txt", "content": "{n}"}},
	})
	if isErr {
		t.Fatal(msg)
	}
	req := ws.python[0]
	if req.Timeout != 5*time.Second || req.OutputChars != 4096 || req.Reads[0] != "in.txt" || req.Writes[0].Mode != "create" || req.Globals["n"] != "1" {
		t.Errorf("request %+v", req)
	}
	for _, w := range []string{"42", "--- stdout ---\nhi", "wrote o.txt (create, 2 bytes)", "did not write x: does not exist"} {
		if !strings.Contains(msg, w) {
			t.Errorf("text %q lacks %q", msg, w)
		}
	}
}
