package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

// exactIDCases are ids mcp-go alone would give back changed, and some it keeps.
var exactIDCases = []string{`18446744073709551616`, `9007199254740993`, `1e3`, `1.50`, `"<&>"`, `7`, `"x"`}

// TestHTTPIDsComeBackExactlyAsWritten pings under every id over streamable
// HTTP (the answer in the POST's body) and SSE (the answer on the stream).
func TestHTTPIDsComeBackExactlyAsWritten(t *testing.T) {
	t.Run("http", func(t *testing.T) {
		base := serveHTTP(t, httpTestServer(t, nil), TransportHTTP)
		session := initialize(t, base)
		for _, id := range exactIDCases {
			req, _ := http.NewRequest(http.MethodPost, base+streamablePath, strings.NewReader(`{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Session-Id", session)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(body), `"id":`+id+`,`) {
				t.Errorf("id %s came back as: %s", id, body)
			}
		}
	})
	t.Run("sse", func(t *testing.T) {
		base := serveHTTP(t, httpTestServer(t, nil), TransportSSE)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+ssePath, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		events := bufio.NewScanner(resp.Body)
		var endpoint string
		for endpoint == "" && events.Scan() {
			if data, ok := strings.CutPrefix(events.Text(), "data: "); ok {
				endpoint = strings.TrimPrefix(data, base)
			}
		}
		post := func(body string) {
			if code := request(t, http.MethodPost, base+endpoint, "", body); code != http.StatusAccepted {
				t.Fatalf("POST %s: %d", body, code)
			}
		}
		next := func() string {
			for events.Scan() {
				if data, ok := strings.CutPrefix(events.Text(), "data: "); ok {
					return data
				}
			}
			t.Fatal("the stream ended")
			return ""
		}
		post(initializeBody)
		next()
		for _, id := range exactIDCases {
			post(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
			if got := next(); !strings.Contains(got, `"id":`+id+`,`) {
				t.Errorf("id %s came back as: %s", id, got)
			}
		}
	})
}

// TestExactIDsAliasTokensCancellationsAndBatches checks what pings cannot:
// progress tokens come back in notifications, a cancellation names the
// alias, batches are aliased member by member, and answered ids are dropped.
func TestExactIDsAliasTokensCancellationsAndBatches(t *testing.T) {
	x := newExactIDs(slog.New(slog.DiscardHandler), nil)
	in := x.rewrite("s1", []byte(`{"jsonrpc":"2.0","id":18446744073709551616,"method":"tools/call","params":{"name":"t","_meta":{"progressToken":1e3}}}`))
	alias := member(in, "id")
	token := member(in, "params", "_meta", "progressToken")
	if !strings.HasPrefix(string(alias), `"wink-`) || !strings.HasPrefix(string(token), `"wink-`) {
		t.Fatalf("not aliased: %s", in)
	}
	cancel := x.rewrite("s1", []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":18446744073709551616}}`))
	if got := member(cancel, "params", "requestId"); string(got) != string(alias) {
		t.Errorf("the cancellation names %s, want the alias %s", got, alias)
	}
	other := x.rewrite("s2", []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":18446744073709551616}}`))
	if got := member(other, "params", "requestId"); string(got) != "18446744073709551616" {
		t.Errorf("another session's cancellation names %s", got)
	}
	progress := `data: {"method":"notifications/progress","params":{"progressToken":` + string(token) + `}}`
	for range 2 {
		if got := string(x.restore([]byte(progress))); !strings.Contains(got, `"progressToken":1e3}`) {
			t.Errorf("progress: %s", got)
		}
	}
	answer := `{"jsonrpc":"2.0","id":` + string(alias) + `,"result":{}}`
	if got := string(x.restore([]byte(answer))); got != `{"jsonrpc":"2.0","id":18446744073709551616,"result":{}}` {
		t.Errorf("answer: %s", got)
	}
	if got := string(x.restore([]byte(answer))); got != answer {
		t.Errorf("an answered id's alias is still held: %s", got)
	}
	batch := x.rewrite("s1", []byte(`[{"jsonrpc":"2.0","id":1.50,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`))
	var members []json.RawMessage
	if err := json.Unmarshal(batch, &members); err != nil || len(members) != 2 ||
		!strings.HasPrefix(string(member(members[0], "id")), `"wink-`) || string(member(members[1], "id")) != "2" {
		t.Errorf("batch: %s", batch)
	}
	if got := string(x.restore([]byte(`"wink-unknown-1" and a plain body`))); got != `"wink-unknown-1" and a plain body` {
		t.Errorf("a body without our aliases changed: %s", got)
	}
}
