package integration

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
)

// sseEvent is one event of a text/event-stream.
type sseEvent struct{ id, data string }

// exchange sends one raw request to a streamable HTTP server and returns the
// response, with the SSE events of its body when it streams.
func exchange(t *testing.T, method, url string, headers map[string]string, body string) (*http.Response, []sseEvent) {
	t.Helper()
	resp := rawRequest(t, method, url, headers, body)
	defer resp.Body.Close()
	var events []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			cur.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		case line == "" && cur.data != "":
			events = append(events, cur)
			cur = sseEvent{}
		}
	}
	return resp, events
}

// TestHTTPStreamCanBeResumed replays a tool call's stream from one of its
// event ids, as a client whose connection broke would ask for it.
func TestHTTPStreamCanBeResumed(t *testing.T) {
	p := launch(t, startOptions{transport: "http"})
	resp, _ := exchange(t, "POST", p.url, nil, initializeBody)
	session := resp.Header.Get("Mcp-Session-Id")
	if session == "" {
		t.Fatalf("no session id: %v", resp.Header)
	}
	h := map[string]string{"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-06-18"}
	exchange(t, "POST", p.url, h, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	_, events := exchange(t, "POST", p.url, h, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"podman_shell",`+
		`"arguments":{"command":["sh","-c","echo first; sleep 3; echo second"]},"_meta":{"progressToken":"p1"}}}`)
	if len(events) < 2 || !strings.Contains(events[0].data, "notifications/progress") || !strings.Contains(events[len(events)-1].data, `"id":2`) {
		t.Fatalf("want progress then the answer, got %+v", events)
	}
	for _, e := range events {
		if e.id == "" {
			t.Fatalf("event without an id: %+v", e)
		}
	}

	resp, replayed := exchange(t, "GET", p.url, map[string]string{"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-06-18", "Last-Event-ID": events[0].id}, "")
	if resp.StatusCode != http.StatusOK || len(replayed) != len(events)-1 {
		t.Fatalf("resume: %d, replayed %+v, want %+v", resp.StatusCode, replayed, events[1:])
	}
	for i, e := range replayed {
		if e != events[i+1] {
			t.Errorf("replayed event %d = %+v, want %+v", i, e, events[i+1])
		}
	}
	resp, _ = exchange(t, "GET", p.url, map[string]string{"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-06-18", "Last-Event-ID": "999999"}, "")
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("unknown event id: %d, want 400", resp.StatusCode)
	}
}
