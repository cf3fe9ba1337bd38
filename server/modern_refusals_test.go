package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/server/mcpgoadapt"
)

// refusalOf runs modernRefusals on body as principal and returns its
// answer's error code and message, and its data.uri (0 and "" when it
// left the request to mcp-go).
func refusalOf(t *testing.T, views *handleViews, principal, body string) (code int, message, dataURI string) {
	t.Helper()
	head, err := mcpgoadapt.DecodeHead([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.WithValue(context.Background(), principalKey{}, principal)
	answer, ok := modernRefusals(views).Answer(ctx, head, json.RawMessage(body))
	if !ok {
		return 0, "", ""
	}
	data, _ := json.Marshal(answer)
	var decoded struct {
		ID    json.RawMessage `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Data    struct {
				URI string `json:"uri"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(data, &decoded); err != nil || string(decoded.ID) != "7" {
		t.Fatalf("%s: answer %s (%v)", body, data, err)
	}
	return decoded.Error.Code, decoded.Error.Message, decoded.Error.Data.URI
}

// TestModernRefusalsGiveTheRevisionsCodes: under 2026-07-28 the removed
// session-scoped methods are not found, an unusable handle in a
// resources/list and a URI no template matches are invalid params naming
// what was wrong; the same requests under 2025, a usable handle and a
// handle's URI are left to mcp-go.
func TestModernRefusalsGiveTheRevisionsCodes(t *testing.T) {
	t.Parallel()
	views, store := newTestViews()
	handle, _, _ := openView(views, store, "alice")
	const modern = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"`
	req := func(method, params string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"` + method + `","params":{` + params + modern + `}}}`
	}
	listWith := func(h string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"resources/list","params":{` + modern + `,"` + handleMetaKey + `":` + h + `}}}`
	}
	for _, c := range []struct {
		principal, body string
		code            int
		says, uri       string
	}{
		{"alice", req("resources/subscribe", `"uri":"wink://workspace/files/a",`), mcp.METHOD_NOT_FOUND, "subscriptions/listen", ""},
		{"alice", req("resources/unsubscribe", `"uri":"wink://workspace/files/a",`), mcp.METHOD_NOT_FOUND, "subscriptions/listen", ""},
		{"alice", req("tasks/list", ""), mcp.METHOD_NOT_FOUND, "io.modelcontextprotocol/tasks", ""},
		{"alice", req("tasks/result", `"taskId":"x",`), mcp.METHOD_NOT_FOUND, "tasks/result", ""},
		{"alice", req("resources/read", `"uri":"test://nonexistent",`), mcp.INVALID_PARAMS, "resource not found", "test://nonexistent"},
		{"alice", req("resources/read", `"uri":"`+handleResourcesPrefix+`wsr_x/files/a",`), 0, "", ""},
		{"alice", listWith(`"` + handle + `"`), 0, "", ""},
		{"bob", listWith(`"` + handle + `"`), mcp.INVALID_PARAMS, "unknown workspace handle", ""},
		{"alice", listWith(`"made-up"`), mcp.INVALID_PARAMS, handleMetaKey + ": unknown workspace handle", ""},
		{"alice", listWith(`42`), mcp.INVALID_PARAMS, "non-empty string", ""},
		{"alice", req("resources/list", ""), 0, "", ""},
		{"alice", `{"jsonrpc":"2.0","id":7,"method":"resources/subscribe","params":{"uri":"wink://workspace/files/a"}}`, 0, "", ""},
		{"alice", `{"jsonrpc":"2.0","id":7,"method":"tasks/list","params":{}}`, 0, "", ""},
	} {
		code, message, uri := refusalOf(t, views, c.principal, c.body)
		if code != c.code || !strings.Contains(message, c.says) || uri != c.uri {
			t.Errorf("%s as %s: %d %q data.uri %q; want %d saying %q, data.uri %q", c.body, c.principal, code, message, uri, c.code, c.says, c.uri)
		}
	}
	if _, end, err := store.begin(handle, "alice"); err != nil {
		t.Errorf("alice's handle after the checks: %v", err)
	} else {
		end()
	}
}
