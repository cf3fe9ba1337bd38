package mcpgoadapt

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// stdioPeer is a client on the other end of ServeStdio.
type stdioPeer struct {
	t       *testing.T
	in      *io.PipeWriter
	lines   chan json.RawMessage
	started atomic.Int64 // block calls that have started
	ended   chan string  // the arguments of block calls that have ended, and why
	release chan struct{}
}

// hangGuard bounds every wait so a broken loop fails the test instead of hanging it.
const hangGuard = 20 * time.Second

// testMaxLine is the longest line the tests' loop reads, the server's default.
const testMaxLine = 4 << 20

// startStdio serves a bare MCP server over pipes, with tools: block (waits
// for release or cancellation), quick, progress (sends one progress
// notification) and roots (asks the client for its roots).
func startStdio(t *testing.T, max int64) *stdioPeer {
	t.Helper()
	p := &stdioPeer{t: t, lines: make(chan json.RawMessage, 1024), ended: make(chan string, 1024), release: make(chan struct{})}
	srv := mcpserver.NewMCPServer("test", "1", mcpserver.WithToolCapabilities(false))
	srv.AddTool(mcp.NewTool("block"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		p.started.Add(1)
		select {
		case <-p.release:
			p.ended <- "released"
		case <-ctx.Done():
			p.ended <- "cancelled"
		}
		return mcp.NewToolResultText("done"), nil
	})
	srv.AddTool(mcp.NewTool("quick"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("quick"), nil
	})
	srv.AddTool(mcp.NewTool("progress"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		err := mcpserver.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/progress",
			map[string]any{"progressToken": req.Params.Meta.ProgressToken, "progress": 1})
		return mcp.NewToolResultText(fmt.Sprint(err)), nil
	})
	srv.AddTool(mcp.NewTool("roots"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := srv.RequestRoots(ctx, mcp.ListRootsRequest{})
		if err != nil {
			return nil, err
		}
		return mcp.NewToolResultText(res.Roots[0].URI), nil
	})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p.in = inW
	done := make(chan error, 1)
	go func() {
		done <- ServeStdio(context.Background(), srv, inR, outW, max, slog.New(slog.DiscardHandler), nil, Interceptor{})
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			p.lines <- append(json.RawMessage(nil), sc.Bytes()...)
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-done:
		case <-time.After(hangGuard):
			t.Error("ServeStdio did not return after its input ended")
		}
	})
	p.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":{}},"clientInfo":{"name":"t","version":"1"}}}`)
	p.answer(`0`)
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return p
}

func (p *stdioPeer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

// next returns the next message the server writes.
func (p *stdioPeer) next() json.RawMessage {
	p.t.Helper()
	select {
	case line := <-p.lines:
		return line
	case <-time.After(hangGuard):
		p.t.Fatal("no message from the server")
		return nil
	}
}

// answer returns the answer whose id is written exactly as id, failing on
// an answer to any other request.
func (p *stdioPeer) answer(id string) json.RawMessage {
	p.t.Helper()
	for {
		msg := p.next()
		if member(msg, "method") != nil {
			continue // a notification or a request of the server
		}
		if got := string(member(msg, "id")); got != id {
			p.t.Fatalf("answer with id %s, want the answer to %s: %s", got, id, msg)
		}
		return msg
	}
}

func (p *stdioPeer) call(id, tool string) {
	p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q}}`, id, tool))
}

func (p *stdioPeer) waitStarted(n int64) {
	p.t.Helper()
	deadline := time.Now().Add(hangGuard)
	for p.started.Load() < n {
		if time.Now().After(deadline) {
			p.t.Fatalf("%d of %d calls started", p.started.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func errorText(msg json.RawMessage) string {
	var e struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(msg, &e)
	return fmt.Sprintf("%d %s", e.Error.Code, e.Error.Message)
}

func TestStdioIDsComeBackExactlyAsWritten(t *testing.T) {
	p := startStdio(t, testMaxLine)
	for _, id := range []string{`18446744073709551616`, `9007199254740993`, `-9007199254740993`, `1e3`, `1.50`, `-0`, `0.1`,
		`123456789012345678901234567890`, `7`, `-7`, `"a"`, `""`, `"\ud800"`, `"<&>"`} {
		p.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
		p.answer(id)
		p.call(id, "quick")
		if msg := p.answer(id); !strings.Contains(string(msg), `"quick"`) {
			t.Errorf("id %s: %s", id, msg)
		}
	}
}

func TestStdioProgressTokensComeBackExactlyAsWritten(t *testing.T) {
	p := startStdio(t, testMaxLine)
	for i, token := range []string{`18446744073709551617`, `1e3`, `5`, `"job"`} {
		id := fmt.Sprint(i + 1)
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"progress","_meta":{"progressToken":%s}}}`, id, token))
		// The notification and the answer, in either order.
		var got json.RawMessage
		for answered := false; got == nil || !answered; {
			msg := p.next()
			if string(member(msg, "method")) == `"notifications/progress"` {
				got = member(msg, "params", "progressToken")
			} else {
				answered = string(member(msg, "id")) == id
			}
		}
		if string(got) != token {
			t.Errorf("progress token %s came back as %s", token, got)
		}
	}
}

// TestStdioQuickCallsAreNotStarved holds many calls open and expects a
// quick one to be answered while they are all still running.
func TestStdioQuickCallsAreNotStarved(t *testing.T) {
	p := startStdio(t, testMaxLine)
	const long = 50
	for i := range long {
		p.call(fmt.Sprint(1000+i), "block")
	}
	p.waitStarted(long)
	p.call("1", "quick")
	if msg := p.answer("1"); !strings.Contains(string(msg), `"quick"`) {
		t.Fatal(string(msg))
	}
	if n := p.started.Load() - int64(len(p.ended)); n != long {
		t.Errorf("%d long calls running when the quick one was answered, want %d", n, long)
	}
	close(p.release)
	for range long {
		p.next()
	}
}

func TestStdioCapsRequestsInFlight(t *testing.T) {
	p := startStdio(t, testMaxLine)
	for i := range MaxStdioInflight {
		p.call(fmt.Sprint(1000+i), "block")
	}
	p.waitStarted(MaxStdioInflight)
	p.call("1", "quick")
	if msg := errorText(p.answer("1")); !strings.Contains(msg, fmt.Sprint(MaxStdioInflight)) || !strings.Contains(msg, "wait") {
		t.Errorf("a request past the cap: %s", msg)
	}
	close(p.release)
	for range MaxStdioInflight {
		p.next()
	}
	p.call("2", "quick")
	p.answer("2")
}

// TestStdioCancelledCallsStopAndAreNotAnswered cancels a running call: its
// handler sees the cancellation and no answer follows.
func TestStdioCancelledCallsStopAndAreNotAnswered(t *testing.T) {
	p := startStdio(t, testMaxLine)
	p.call(`18446744073709551616`, "block")
	p.waitStarted(1)
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":18446744073709551616}}`)
	select {
	case why := <-p.ended:
		if why != "cancelled" {
			t.Fatalf("the call ended %s", why)
		}
	case <-time.After(hangGuard):
		t.Fatal("the cancelled call did not stop")
	}
	p.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	p.answer("2") // fails on an answer to the cancelled call
}

func TestStdioRefusesAnIDInFlight(t *testing.T) {
	p := startStdio(t, testMaxLine)
	p.call("5", "block")
	p.waitStarted(1)
	p.call("5", "quick")
	if msg := errorText(p.answer("5")); !strings.Contains(msg, "id 5 is already") {
		t.Errorf("a second request with id 5: %s", msg)
	}
	close(p.release)
	if msg := p.answer("5"); !strings.Contains(string(msg), "done") {
		t.Errorf("the first request with id 5: %s", msg)
	}
}

// TestStdioRefusesLinesOverTheLimit sends lines over the limit with the id
// first, last and absent; each gets an error and the session goes on.
func TestStdioRefusesLinesOverTheLimit(t *testing.T) {
	const max = 64 << 10
	p := startStdio(t, max)
	big := strings.Repeat("x", 1<<20)
	for _, tt := range []struct{ line, id string }{
		{`{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"write_file","arguments":{"content":"` + big + `"}}}`, "41"},
		{`{"method":"tools/call","params":{"arguments":{"content":"` + big + `"}},"jsonrpc":"2.0","id":"last"}`, `"last"`},
		{`{"params":{"content":"` + big + `"}}`, "null"},
		{`{"jsonrpc":"2.0","id":43,"method":"ping","params":{"a":"` + strings.Repeat("y", max) + `"}}`, "43"},
	} {
		p.send(tt.line)
		msg := errorText(p.answer(tt.id))
		if !strings.Contains(msg, fmt.Sprint(max)) || !strings.Contains(msg, "--max-body") {
			t.Errorf("a line of %d bytes: %s", len(tt.line), msg)
		}
		p.send(`{"jsonrpc":"2.0","id":9,"method":"ping"}`)
		p.answer("9")
	}
	// A line just within the limit is served.
	pad := strings.Repeat("z", max-100)
	line := `{"jsonrpc":"2.0","id":10,"method":"ping","params":{"a":"` + pad + `"}}`
	p.send(line)
	if msg := p.answer("10"); member(msg, "error") != nil {
		t.Errorf("a line of %d bytes under a limit of %d: %s", len(line), max, msg)
	}
}

func TestStdioAnswersMalformedMessages(t *testing.T) {
	p := startStdio(t, testMaxLine)
	for _, tt := range []struct{ line, want string }{
		{`not json`, "-32700"},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, "-32700"},
		{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, "must be a string or a number"},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, "must be a string or a number"},
	} {
		p.send(tt.line)
		if msg := errorText(p.answer("null")); !strings.Contains(msg, tt.want) {
			t.Errorf("%s: %s", tt.line, msg)
		}
	}
	p.send(``)
	p.send(`{"jsonrpc":"2.0","id":77,"result":{}}`) // an answer to nothing
	p.send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	p.answer("3")
}

func TestStdioAsksTheClientForRoots(t *testing.T) {
	p := startStdio(t, testMaxLine)
	p.call("1", "roots")
	req := p.next()
	if string(member(req, "method")) != `"roots/list"` {
		t.Fatalf("want a roots/list request, got %s", req)
	}
	p.send(`{"jsonrpc":"2.0","id":` + string(member(req, "id")) + `,"result":{"roots":[{"uri":"file:///src"}]}}`)
	if msg := p.answer("1"); !strings.Contains(string(msg), "file:///src") {
		t.Errorf("roots: %s", msg)
	}
}

func TestKeepsID(t *testing.T) {
	for raw, want := range map[string]bool{`0`: true, `9007199254740992`: true, `-9007199254740992`: true, `"x"`: true,
		`9007199254740993`: false, `1e3`: false, `1.50`: false, `"<"`: false, `"\ud800"`: false, `"\u0041"`: false} {
		if got := keepsID(json.RawMessage(raw)); got != want {
			t.Errorf("keepsID(%s) = %v, want %v", raw, got, want)
		}
	}
}
