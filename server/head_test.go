package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/server/mcpgoadapt"
)

// headCall is a tools/call of head_seen, whose answer says whether the
// call's context carries the head its transport decoded.
const headCall = `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"head_seen","arguments":{},"_meta":{"progressToken":1e3}}}`

// headServer is a test server with the tool head_seen.
func headServer(t *testing.T) *Server {
	s := httpTestServer(t, nil)
	s.mcp.AddTool(mcp.NewTool("head_seen"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if head, err := mcpgoadapt.HeadOf(ctx, nil); err == nil && head.MethodName() == string(mcp.MethodToolsCall) {
			return mcp.NewToolResultText("carried"), nil
		}
		return mcp.NewToolResultText("not carried"), nil
	})
	return s
}

// TestTransportsCarryTheHead checks, on every transport, that a request
// reaches mcp-go, and so checkRequest, with the head its transport decoded
// in its context: the checks then read the head, not the message again.
func TestTransportsCarryTheHead(t *testing.T) {
	check := func(t *testing.T, answer string) {
		t.Helper()
		if !strings.Contains(answer, `"carried"`) {
			t.Errorf("the call's context does not carry its head: %s", answer)
		}
	}
	t.Run("stdio", func(t *testing.T) {
		c := serveStdioPipe(t, headServer(t))
		c.call(initializeBody)
		c.notify(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		check(t, c.call(headCall))
	})
	t.Run("http", func(t *testing.T) {
		base := serveHTTP(t, headServer(t), TransportHTTP)
		req, _ := http.NewRequest(http.MethodPost, base+streamablePath, strings.NewReader(headCall))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", initialize(t, base))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		answer, _ := io.ReadAll(resp.Body)
		check(t, string(answer))
	})
	t.Run("sse", func(t *testing.T) {
		base := serveHTTP(t, headServer(t), TransportSSE)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+ssePath, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		events := bufio.NewScanner(resp.Body)
		next := func() string {
			for events.Scan() {
				if data, ok := strings.CutPrefix(events.Text(), "data: "); ok {
					return data
				}
			}
			t.Fatal("the stream ended")
			return ""
		}
		endpoint := strings.TrimPrefix(next(), base)
		for _, body := range []string{initializeBody, headCall} {
			post, err := http.Post(base+endpoint, "application/json", bytes.NewReader([]byte(body)))
			if err != nil {
				t.Fatal(err)
			}
			post.Body.Close()
			if answer := next(); body == headCall {
				check(t, answer)
			}
		}
	})
}

// TestDiscoverOffersBothRevisionsWhateverElseItCarries sends server/discover
// with members the checks do not need but used to choke on (a uri that is
// not a string): stdio answers with the 2026-07-28 revision and the 2025
// ones, and instructions that say to open a workspace first.
func TestDiscoverOffersBothRevisionsWhateverElseItCarries(t *testing.T) {
	c := serveStdioPipe(t, newTestServer(t))
	answer := c.call(`{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{"uri":5,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	for _, want := range []string{`"2026-07-28"`, `"2025-11-25"`, `"wink-mcp"`, "call workspace_open first"} {
		if !strings.Contains(answer, want) {
			t.Errorf("server/discover answered without %s: %s", want, answer)
		}
	}
}

// TestSSEIsLegacyOnly: the SSE transport, which the spec deprecates,
// refuses server/discover and 2026-07-28 requests, so clients fall back to
// initialize there.
func TestSSEIsLegacyOnly(t *testing.T) {
	ctx := context.WithValue(context.Background(), legacyOnlyKey{}, true)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{"uri":5}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"uri":5,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
	} {
		head, err := mcpgoadapt.HeadOf(ctx, json.RawMessage(body))
		if err != nil {
			t.Fatal(err)
		}
		if err := refuseSessionless(ctx, head); err == nil || !strings.Contains(err.Error(), "SSE transport speaks the protocol revisions with sessions") {
			t.Errorf("%s on SSE: %v", body, err)
		}
		if err := refuseSessionless(context.Background(), head); err != nil {
			t.Errorf("%s on stdio or streamable HTTP: %v", body, err)
		}
	}
}

// stdioPipe is a client of a server served over pipes.
type stdioPipe struct {
	t   *testing.T
	in  io.Writer
	out *bufio.Reader
}

// serveStdioPipe serves s over pipes until the test ends.
func serveStdioPipe(t *testing.T, s *Server) *stdioPipe {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- s.ServeStdio(context.Background(), inR, outW) }()
	t.Cleanup(func() { inW.Close(); <-done })
	return &stdioPipe{t: t, in: inW, out: bufio.NewReader(outR)}
}

// notify sends a line that has no answer.
func (c *stdioPipe) notify(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// call sends a request and returns the next line the server writes.
func (c *stdioPipe) call(line string) string {
	c.t.Helper()
	c.notify(line)
	answer, err := c.out.ReadString('\n')
	if err != nil {
		c.t.Fatal(err)
	}
	return answer
}

// TestSessionScopedRequestsOf2026AreRefused: tasks and resource
// subscriptions are a session's; a 2026-07-28 request is refused them,
// a 2025 one is not.
func TestSessionScopedRequestsOf2026AreRefused(t *testing.T) {
	const modern = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	for body, refused := range map[string]bool{
		`{"jsonrpc":"2.0","id":1,"method":"tasks/list","params":{` + modern + `}}`:                                           true,
		`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"x",` + modern + `}}`:                               true,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ls","task":{"ttl":1000},` + modern + `}}`:           true,
		`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"wink://workspace/files/a",` + modern + `}}`: true,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ls",` + modern + `}}`:                               false,
		`{"jsonrpc":"2.0","id":1,"method":"tasks/list","params":{}}`:                                                         false,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ls","task":{"ttl":1000}}}`:                          false,
	} {
		head, err := mcpgoadapt.HeadOf(context.Background(), json.RawMessage(body))
		if err != nil {
			t.Fatal(err)
		}
		if err := refuseSessionScoped(head); (err != nil) != refused {
			t.Errorf("%s: %v, want refused %v", body, err, refused)
		}
	}
}
