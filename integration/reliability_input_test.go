package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// badInput is one malformed tools/call: raw JSON arguments, so duplicate
// keys and invalid UTF-8 reach the server as sent, and the words its error
// must contain (the field, and the limit or rule).
type badInput struct {
	tool, args string
	want       []string
}

// badInputs covers every tool's fields: limits at and above their bound,
// wrong types, unknown and duplicated keys, control and non-ASCII bytes,
// escapes of the workspace.
func badInputs() []badInput {
	seg81 := strings.Repeat("a", 81)
	depth17 := strings.TrimSuffix(strings.Repeat("d/", 17), "/")
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	var cases []badInput
	pathTools := map[string]string{"ls": "path", "read_file": "file_path", "write_file": "file_path", "edit_file": "file_path",
		"glob": "path", "grep": "path", "rm": "path", "podman_shell": "cwd", "workspace_changes": "path", "workspace_diff": "path"}
	extra := map[string]string{"write_file": `,"content":"x"`, "edit_file": `,"old_string":"a","new_string":"b"`,
		"glob": `,"pattern":"*"`, "grep": `,"pattern":"x"`, "podman_shell": `,"command":["true"]`}
	for tool, field := range pathTools {
		for _, bad := range []struct{ path, why string }{
			{"../x", ".."}, {"a/../../x", ".."}, {"/etc/passwd", "relative"}, {"a\x00b", "control"}, {"a\nb", "control"},
			{"caf\u00e9.txt", "ASCII"}, {"\u202etxt.exe", "ASCII"}, {depth17, "16"}, {seg81, "80"}, {"~/x", ""},
		} {
			want := []string{field}
			if bad.why != "" {
				want = append(want, bad.why)
			}
			cases = append(cases, badInput{tool, `{"` + field + `":` + q(bad.path) + extra[tool] + `}`, want})
		}
		cases = append(cases,
			badInput{tool, `{"` + field + `":123` + extra[tool] + `}`, []string{field}},
			badInput{tool, `{"` + field + `":"a","` + field + `":"b"` + extra[tool] + `}`, []string{field}},
			badInput{tool, `{"` + field + `":"a","nonsense":1` + extra[tool] + `}`, []string{"nonsense"}},
			badInput{tool, `{"` + field + `":"a` + "\xff" + `b"` + extra[tool] + `}`, []string{field}},
		)
	}
	big := strings.Repeat("x", 48001)
	cases = append(cases,
		badInput{"write_file", `{"file_path":"canary.txt","content":"` + big + `"}`, []string{"content", "48000"}},
		badInput{"write_file", `{"file_path":"canary.txt","content":null}`, []string{"content"}},
		badInput{"write_file", `{"file_path":"canary.txt","Content":"x","content":"y"}`, []string{"Content"}},
		badInput{"edit_file", `{"file_path":"canary.txt","old_string":"","new_string":"b"}`, []string{"old_string"}},
		badInput{"edit_file", `{"file_path":"canary.txt","old_string":"a","new_string":"` + big + `"}`, []string{"new_string", "48000"}},
		badInput{"read_file", `{"file_path":"canary.txt","limit":2001}`, []string{"limit", "2000"}},
		badInput{"read_file", `{"file_path":"canary.txt","limit":0}`, []string{"limit"}},
		badInput{"read_file", `{"file_path":"canary.txt","offset":-1}`, []string{"offset"}},
		badInput{"glob", `{"pattern":"[a-"}`, []string{"pattern"}},
		badInput{"glob", `{"pattern":"` + strings.Repeat("*", 1025) + `"}`, []string{"pattern", "1024"}},
		badInput{"grep", `{"pattern":"(a"}`, []string{"pattern"}},
		badInput{"grep", `{"pattern":"(a)\\1"}`, []string{"pattern"}},
		badInput{"grep", `{"pattern":"a{1001}"}`, []string{"pattern"}},
		badInput{"grep", `{"pattern":"` + strings.Repeat("(", 1001) + `"}`, []string{"pattern"}},
		badInput{"rm", `{"path":""}`, []string{"path"}},
		badInput{"rm", `{"path":"."}`, []string{"path"}},
		badInput{"podman_shell", `{"command":[]}`, []string{"command"}},
		badInput{"podman_shell", `{"command":[""]}`, []string{"command"}},
		badInput{"podman_shell", `{"command":"echo hi"}`, []string{"command"}},
		badInput{"podman_shell", `{"command":["sh","-c","` + strings.Repeat("x", 4093) + `"]}`, []string{"command", "4096"}},
		badInput{"podman_shell", `{"command":["true"],"timeout_seconds":0}`, []string{"timeout_seconds"}},
		badInput{"podman_shell", `{"command":["true"],"timeout_seconds":1801}`, []string{"timeout_seconds", "1800"}},
		badInput{"podman_shell", `{"command":["true"],"timeout_seconds":1.5}`, []string{"timeout_seconds"}},
		badInput{"podman_shell", `{"command":["true"],"timeout_seconds":"10"}`, []string{"timeout_seconds"}},
		badInput{"podman_shell", `{"command":["true"],"env":{"A":"caf\u00e9"}}`, []string{"env"}},
		badInput{"podman_shell", `{"command":["true"],"env":{"1X":"a"}}`, []string{"env"}},
		badInput{"podman_shell", `{"command":["true"],"env":[]}`, []string{"env"}},
		badInput{"podman_shell", `{"command":["true"],"stdin":"` + big + `"}`, []string{"stdin", "48000"}},
		badInput{"podman_shell", `{"command":["true"],"action":"explode"}`, []string{"action"}},
		badInput{"evaluate_python", `{"code":""}`, []string{"code"}},
		badInput{"evaluate_python", `{"code":"` + strings.Repeat("x", 2001) + `"}`, []string{"code", "2000"}},
		badInput{"workspace_diff", `{"limit":2001}`, []string{"limit", "2000"}},
		badInput{"nonexistent_tool", `{}`, []string{"nonexistent_tool"}},
	)
	return cases
}

func TestReliabilityBadInput(t *testing.T) {
	cases := badInputs()
	call := func(id int, tool, args string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args)
	}
	reqs := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bad","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		call(2, "write_file", `{"file_path":"canary.txt","content":"canary a\n"}`),
	}
	for i, c := range cases {
		reqs = append(reqs, call(100+i, c.tool, c.args))
	}
	// Requests are served at once, in no set order: the check waits for
	// the canary's write (it once ran between the listing and the cat).
	reqs = append(reqs, call(99, "podman_shell", `{"command":["sh","-c","i=0; while [ ! -f canary.txt ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; find . | sort; cat canary.txt"]}`))
	lines, _ := rawSession(t, reqs, 2+len(cases)+1)

	answers := map[int]map[string]any{}
	for _, l := range lines {
		var msg map[string]any
		if json.Unmarshal([]byte(l), &msg) != nil {
			continue
		}
		if id, ok := msg["id"].(float64); ok {
			answers[int(id)] = msg
		}
	}
	var unclear, crashes int
	for i, c := range cases {
		msg, ok := answers[100+i]
		if !ok {
			crashes++
			t.Errorf("%s %.120s: no answer", c.tool, c.args)
			continue
		}
		text, isErr := answerText(msg)
		missing := []string{}
		for _, w := range c.want {
			if !strings.Contains(text, w) {
				missing = append(missing, w)
			}
		}
		if !isErr || len(missing) > 0 {
			unclear++
			t.Errorf("%s %.120q: error=%v, lacks %q: %.300s", c.tool, c.args, isErr, missing, text)
		}
	}
	final, _ := answerText(answers[99])
	changed := 0
	if !strings.Contains(final, ".\n./canary.txt\ncanary a") || strings.Count(final, "./") != 1 {
		changed = 1
		t.Errorf("the workspace changed: %q", final)
	}
	t.Logf("%d bad inputs: %d unclear answers, %d without an answer, workspace changed: %v", len(cases), unclear, crashes, changed > 0)
	suite.record(func(f *figures) {
		f.BadInput = badInputFigures{Tried: len(cases), Crashes: crashes, Unclear: unclear, Changed: changed}
	})
}

// answerText returns the text of a JSON-RPC answer and whether it is an
// error: a tool error, or a protocol error.
func answerText(msg map[string]any) (string, bool) {
	if e, ok := msg["error"].(map[string]any); ok {
		b, _ := json.Marshal(e)
		return string(b), true
	}
	res, _ := msg["result"].(map[string]any)
	isErr, _ := res["isError"].(bool)
	var text strings.Builder
	content, _ := res["content"].([]any)
	for _, c := range content {
		if m, ok := c.(map[string]any); ok {
			s, _ := m["text"].(string)
			text.WriteString(s)
		}
	}
	if sc, ok := res["structuredContent"].(map[string]any); ok {
		if out, ok := sc["stdout"].(string); ok && text.Len() == 0 {
			text.WriteString(out)
		}
	}
	return text.String(), isErr
}
