package server

import (
	"bufio"
	"context"
	"io"
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
