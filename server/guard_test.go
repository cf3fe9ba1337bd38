package server

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

const goodToken = "0123456789abcdef0123456789abcdef"

// guarded returns a guard in front of a handler that reports the principal
// and how much body it could read.
func guarded(t *testing.T, cfg HTTPConfig, store *sessionStore) http.Handler {
	t.Helper()
	if cfg.MaxSessions == 0 {
		cfg.MaxSessions = 2
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = 1024
	}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		_, _ = io.WriteString(w, "ok principal="+principalFrom(r.Context())+" body="+strconv.FormatInt(n, 10))
	})
	return newGuard(cfg, store, nil, slog.New(slog.DiscardHandler), next)
}

func send(h http.Handler, method, target string, headers map[string]string, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	r.Host = "127.0.0.1:8080"
	for k, v := range headers {
		if k == "Host" {
			r.Host = v
			continue
		}
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestGuardHostAndOrigin(t *testing.T) {
	h := guarded(t, HTTPConfig{Addr: "127.0.0.1:8080", AllowedHosts: []string{"mcp.internal"}, AllowedOrigins: []string{"https://app.example.com"}}, newSessionStore())
	tests := []struct {
		name    string
		headers map[string]string
		want    int
	}{
		{name: "loopback ip", headers: map[string]string{"Host": "127.0.0.1:8080"}, want: 200},
		{name: "localhost", headers: map[string]string{"Host": "localhost:8080"}, want: 200},
		{name: "ipv6 loopback", headers: map[string]string{"Host": "[::1]:8080"}, want: 200},
		{name: "configured host", headers: map[string]string{"Host": "MCP.internal:443"}, want: 200},
		{name: "foreign host (DNS rebinding)", headers: map[string]string{"Host": "evil.example"}, want: 403},
		{name: "localhost prefix of a foreign host", headers: map[string]string{"Host": "localhost.evil.example"}, want: 403},
		{name: "loopback origin", headers: map[string]string{"Origin": "http://127.0.0.1:6274"}, want: 200},
		{name: "localhost origin", headers: map[string]string{"Origin": "http://localhost:8080"}, want: 200},
		{name: "configured origin", headers: map[string]string{"Origin": "https://app.example.com"}, want: 200},
		{name: "foreign origin", headers: map[string]string{"Origin": "http://evil.example"}, want: 403},
		{name: "null origin", headers: map[string]string{"Origin": "null"}, want: 403},
		{name: "lookalike origin", headers: map[string]string{"Origin": "http://localhost.evil.example"}, want: 403},
		{name: "configured origin on another port", headers: map[string]string{"Origin": "https://app.example.com:8443"}, want: 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := send(h, "POST", "/mcp", tt.headers, "{}").Code; got != tt.want {
				t.Errorf("status %d, want %d", got, tt.want)
			}
		})
	}
}

func TestGuardToken(t *testing.T) {
	h := guarded(t, HTTPConfig{Addr: "0.0.0.0:8080", AuthTokens: []string{goodToken, "another-token-of-length-32-chars"}, AllowedHosts: []string{"127.0.0.1"}}, newSessionStore())
	tests := []struct {
		name    string
		headers map[string]string
		target  string
		want    int
	}{
		{name: "missing", want: 401},
		{name: "wrong", headers: map[string]string{"Authorization": "Bearer wrong-token-wrong-token-wrong"}, want: 401},
		{name: "wrong scheme", headers: map[string]string{"Authorization": "Basic " + goodToken}, want: 401},
		{name: "in the query", target: "/mcp?access_token=" + goodToken, want: 401},
		{name: "in a cookie", headers: map[string]string{"Cookie": "token=" + goodToken}, want: 401},
		{name: "right", headers: map[string]string{"Authorization": "Bearer " + goodToken}, want: 200},
		{name: "scheme is case-insensitive", headers: map[string]string{"Authorization": "bearer " + goodToken}, want: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := tt.target
			if target == "" {
				target = "/mcp"
			}
			w := send(h, "POST", target, tt.headers, "{}")
			if w.Code != tt.want {
				t.Fatalf("status %d, want %d", w.Code, tt.want)
			}
			if w.Code == 401 && w.Header().Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
			if strings.Contains(w.Body.String(), goodToken) {
				t.Error("the token is echoed")
			}
		})
	}
	a := send(h, "POST", "/mcp", map[string]string{"Authorization": "Bearer " + goodToken}, "").Body.String()
	b := send(h, "POST", "/mcp", map[string]string{"Authorization": "Bearer another-token-of-length-32-chars"}, "").Body.String()
	if a == b || strings.Contains(a, goodToken[:8]) {
		t.Errorf("principals %q and %q: want distinct digests, not the token", a, b)
	}
}

func TestGuardSessions(t *testing.T) {
	store := newSessionStore()
	h := guarded(t, HTTPConfig{Addr: "127.0.0.1:8080", AuthTokens: []string{goodToken, "another-token-of-length-32-chars"}}, store)
	mine := map[string]string{"Authorization": "Bearer " + goodToken}
	theirs := map[string]string{"Authorization": "Bearer another-token-of-length-32-chars"}
	principal := send(h, "POST", "/mcp", mine, "").Body.String()
	principal = strings.TrimPrefix(strings.Fields(principal)[1], "principal=")
	id := newID()
	store.add(id, principal)
	with := func(headers map[string]string, session string) map[string]string {
		out := map[string]string{"Mcp-Session-Id": session}
		for k, v := range headers {
			out[k] = v
		}
		return out
	}
	if got := send(h, "POST", "/mcp", with(mine, id), "{}").Code; got != 200 {
		t.Errorf("own session: %d", got)
	}
	if got := send(h, "POST", "/mcp", with(theirs, id), "{}").Code; got != 404 {
		t.Errorf("another principal's session: %d, want 404", got)
	}
	if got := send(h, "POST", "/message?sessionId="+id, theirs, "{}").Code; got != 404 {
		t.Errorf("another principal's SSE session: %d, want 404", got)
	}
	for _, bad := range []string{"wink-unknown", strings.Repeat("x", 10_000), "../../etc"} {
		if got := send(h, "POST", "/mcp", with(mine, bad), "{}").Code; got != 404 {
			t.Errorf("session %.20q: %d, want 404", bad, got)
		}
	}
	if _, err := (sessionIDs{store: store}).Terminate(id); err != nil {
		t.Fatal(err)
	}
	if got := send(h, "POST", "/mcp", with(mine, id), "{}").Code; got != 404 {
		t.Errorf("ended session: %d, want 404", got)
	}
}

func TestGuardSessionCapAndBody(t *testing.T) {
	store := newSessionStore()
	h := guarded(t, HTTPConfig{Addr: "127.0.0.1:8080", MaxSessions: 2, MaxBodyBytes: 100}, store)
	store.add(newID(), "")
	if got := send(h, "POST", "/mcp", nil, "{}").Code; got != 200 {
		t.Errorf("under the cap: %d", got)
	}
	store.add(newID(), "")
	w := send(h, "POST", "/mcp", nil, "{}")
	if w.Code != 503 || !strings.Contains(w.Body.String(), "at most 2") {
		t.Errorf("at the cap: %d %q", w.Code, w.Body.String())
	}
	if got := send(h, "GET", "/sse", nil, "").Code; got != 503 {
		t.Errorf("new SSE stream at the cap: %d", got)
	}
	if got := send(h, "POST", "/message?sessionId=x", nil, strings.Repeat("a", 101)).Code; got != 404 {
		t.Errorf("message for an unknown session: %d", got)
	}
	store = newSessionStore()
	h = guarded(t, HTTPConfig{Addr: "127.0.0.1:8080", MaxSessions: 2, MaxBodyBytes: 100}, store)
	if got := send(h, "POST", "/mcp", nil, strings.Repeat("a", 101)).Code; got != http.StatusRequestEntityTooLarge {
		t.Errorf("body over the cap: %d", got)
	}
}

func TestSessionIDs(t *testing.T) {
	seen := map[string]bool{}
	for range 10_000 {
		id := newID()
		if seen[id] || len(id) < 40 {
			t.Fatalf("id %q repeated or short", id)
		}
		seen[id] = true
	}
}

func TestHTTPConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     HTTPConfig
		wantErr string
	}{
		{name: "loopback without token", cfg: HTTPConfig{Addr: "127.0.0.1:8080"}},
		{name: "localhost without token", cfg: HTTPConfig{Addr: "localhost:0"}},
		{name: "ipv6 loopback without token", cfg: HTTPConfig{Addr: "[::1]:8080"}},
		{name: "all interfaces without token", cfg: HTTPConfig{Addr: "0.0.0.0:8080"}, wantErr: "without a bearer token"},
		{name: "all interfaces, empty host", cfg: HTTPConfig{Addr: ":8080"}, wantErr: "without a bearer token"},
		{name: "a LAN address without token", cfg: HTTPConfig{Addr: "192.168.1.5:8080"}, wantErr: "without a bearer token"},
		{name: "all interfaces with token", cfg: HTTPConfig{Addr: "0.0.0.0:8080", AuthTokens: []string{goodToken}}},
		{name: "short token", cfg: HTTPConfig{Addr: "0.0.0.0:8080", AuthTokens: []string{"short"}}, wantErr: "shorter than 16"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.MaxSessions, tt.cfg.MaxBodyBytes = 1, 1<<20
			err := tt.cfg.Validate()
			if (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("Validate = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// A handed-over workspace waiting for an attach holds a session's slot:
// with one session and one waiting, a cap of 2 refuses a new session and
// says why.
func TestGuardCountsHandedOverWorkspaces(t *testing.T) {
	store := newSessionStore()
	g := guarded(t, HTTPConfig{Addr: "127.0.0.1:8080", MaxSessions: 2, MaxBodyBytes: 100}, store).(*guard)
	store.add(newID(), "")
	if got := send(g, "POST", "/mcp", nil, "{}").Code; got != 200 {
		t.Errorf("one session, none waiting: %d", got)
	}
	g.reserve = func(sl *slot) (int, bool) { return 1, store.reserve(sl, 2-1) }
	w := send(g, "POST", "/mcp", nil, "{}")
	if w.Code != 503 || !strings.Contains(w.Body.String(), "counting 1 handed-over") || !strings.Contains(w.Body.String(), "--max-sessions") {
		t.Errorf("one session and one handed-over workspace, cap 2: %d %q", w.Code, w.Body.String())
	}
}

// add records a session outside any request.
func (st *sessionStore) add(id, principal string) {
	st.open(&slot{}, id, principal)
}
