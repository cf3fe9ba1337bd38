package integration

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// logListener collects a client's notifications/message.
type logListener struct {
	mu   sync.Mutex
	msgs []map[string]any
}

func (l *logListener) listen(p *proc) {
	p.client.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method != "notifications/message" {
			return
		}
		data, _ := n.Params.AdditionalFields["data"].(map[string]any)
		data["level"] = n.Params.AdditionalFields["level"]
		l.mu.Lock()
		l.msgs = append(l.msgs, data)
		l.mu.Unlock()
	})
}

// find returns the records with this message.
func (l *logListener) find(message string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, m := range l.msgs {
		if m["message"] == message {
			out = append(out, m)
		}
	}
	return out
}

func setLevel(t *testing.T, p *proc, level mcp.LoggingLevel) {
	t.Helper()
	var req mcp.SetLevelRequest
	req.Params.Level = level
	//lint:ignore SA1019 clients of the protocol before 2026-07-28 still set the log level; the server serves them
	if err := p.client.SetLevel(context.Background(), req); err != nil {
		t.Fatalf("logging/setLevel %s: %v", level, err)
	}
}

// TestLogsReachTheirSessionsClient sets a logging level and restarts the
// container: the session's client hears its container's lifecycle at or
// above the level, naming its own session only, without the values
// --env-pass passes; a client that set no level hears nothing.
func TestLogsReachTheirSessionsClient(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr, args: []string{"--env-pass", "WINKTEST_LOG_SECRET"}, env: []string{"WINKTEST_LOG_SECRET=s3cret-in-logs"}})
		var mine logListener
		mine.listen(p)
		var other *proc
		var theirs logListener
		if tr != "stdio" {
			other = p.sibling(nil, "")
			theirs.listen(other)
			setLevel(t, other, mcp.LoggingLevelWarning)
		}
		setLevel(t, p, mcp.LoggingLevelInfo)
		p.shell(map[string]any{"action": "stop"})
		p.run("sh", "-c", "echo s3cret-in-logs")
		waitUntil(t, 10*time.Second, "the container's lifecycle to reach the client", func() bool { return len(mine.find("workspace ready")) > 0 })
		// The only tool calls so far are this session's.
		hash := p.logs.find("tool call", map[string]any{"tool": "podman_shell"})["session"]
		for _, rec := range append(mine.find("workspace removed"), mine.find("workspace ready")...) {
			if rec["session"] != hash || rec["level"] != "info" {
				t.Errorf("record %v: want this session's (%v), at info", rec, hash)
			}
		}
		mine.mu.Lock()
		for _, m := range mine.msgs {
			if m["session"] != hash {
				t.Errorf("a record of another session reached this client: %v", m)
			}
			for _, v := range m {
				if s, ok := v.(string); ok && strings.Contains(s, "s3cret-in-logs") {
					t.Errorf("a passed value reached the client: %v", m)
				}
			}
		}
		mine.mu.Unlock()
		if other != nil {
			other.run("true")
			theirs.mu.Lock()
			if len(theirs.msgs) != 0 {
				t.Errorf("a client at warning heard %v", theirs.msgs)
			}
			theirs.mu.Unlock()
		}
	})
}
