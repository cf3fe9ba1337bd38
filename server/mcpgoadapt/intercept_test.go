package mcpgoadapt

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestChainAsksEachInTurn: a chained interceptor takes a message holding
// any member's marker, answers with the first member that answers, and
// leaves the rest to mcp-go.
func TestChainAsksEachInTurn(t *testing.T) {
	answering := func(marker, answer string) Interceptor {
		return Interceptor{Markers: [][]byte{[]byte(marker)}, Answer: func(_ context.Context, head *Head, _ json.RawMessage) (any, bool) {
			return answer, head.MethodName() == marker
		}}
	}
	chain := Chain(answering("a/x", "first"), answering("b/y", "second"))
	for method, want := range map[string]any{"a/x": "first", "b/y": "second", "c/z": nil} {
		msg := json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{"note":"a/x b/y"}}`)
		head, err := DecodeHead(msg)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := chain.answer(context.Background(), head, msg)
		if got != want || ok != (want != nil) {
			t.Errorf("%s: %v %v, want %v", method, got, ok, want)
		}
	}
	if (Interceptor{}).takes([]byte("anything")) || Chain().takes([]byte("anything")) {
		t.Error("an interceptor without markers or an answer takes messages")
	}
}

// TestInterceptedAnswerStatus: an intercepted error under 2026-07-28 gets
// the HTTP status that revision gives its code, as mcp-go's own errors do;
// under 2025, and for results, the status is 200.
func TestInterceptedAnswerStatus(t *testing.T) {
	const modern = `{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
	const old = `{"jsonrpc":"2.0","id":1,"method":"m","params":{}}`
	for _, c := range []struct {
		request, answer string
		want            int
	}{
		{modern, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"m"}}`, http.StatusNotFound},
		{modern, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"m"}}`, http.StatusBadRequest},
		{modern, `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"m"}}`, http.StatusBadRequest},
		{modern, `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"m"}}`, http.StatusOK},
		{modern, `{"jsonrpc":"2.0","id":1,"result":{}}`, http.StatusOK},
		{old, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"m"}}`, http.StatusOK},
	} {
		head, err := DecodeHead([]byte(c.request))
		if err != nil {
			t.Fatal(err)
		}
		w := httptest.NewRecorder()
		writeAnswer(w, head, json.RawMessage(c.answer))
		if w.Code != c.want || !strings.Contains(w.Body.String(), `"id":1`) || w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s to %s: %d %q, want %d", c.answer, c.request, w.Code, w.Body.String(), c.want)
		}
	}
}
