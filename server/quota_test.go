package server

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/testwait"
	"github.com/wink-mcp/wink-mcp/quota"
)

const otherToken = "fedcba9876543210fedcba9876543210"

// modernMeta is the _meta of a 2026-07-28 request.
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}`

// post sends body to the streamable HTTP endpoint with token's bearer
// (and session's id, if any) and returns the status, session id and body.
func post(t *testing.T, base, token, session, body string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+streamablePath, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if strings.Contains(body, `"2026-07-28"`) {
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", strings.SplitN(strings.SplitN(body, `"name":"`, 2)[1], `"`, 2)[0])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(out)
}

func quotaServer(t *testing.T, limits quota.Limits) (*Server, string) {
	t.Helper()
	s := httpTestServer(t, func(c *Config) {
		c.HTTP.AuthTokens = []string{goodToken, otherToken}
		c.Quotas = quota.New(limits)
		c.Lazy = true
	})
	return s, serveHTTP(t, s, TransportHTTP)
}

// A principal past its workspaces quota is refused a new session (429,
// naming the quota, its flag, the limit and what to do); another principal
// is not; ending a session gives its share back.
func TestWorkspacesQuotaRefusesOnePrincipalOnly(t *testing.T) {
	s, base := quotaServer(t, quota.Limits{Workspaces: 1})
	code, first, _ := post(t, base, goodToken, "", initializeBody)
	if code != http.StatusOK || first == "" {
		t.Fatalf("a's first session: %d %q", code, first)
	}
	code, _, body := post(t, base, goodToken, "", initializeBody)
	if code != http.StatusTooManyRequests {
		t.Fatalf("a's second session: HTTP %d, want 429 (%s)", code, body)
	}
	for _, want := range []string{"workspaces quota", "--quota-workspaces", "limit of 1", "hold 1"} {
		if !strings.Contains(body, want) {
			t.Errorf("refusal %q lacks %q", body, want)
		}
	}
	if code, id, _ := post(t, base, otherToken, "", initializeBody); code != http.StatusOK || id == "" {
		t.Fatalf("b's session while a is at its quota: %d", code)
	}
	// a's own session still works.
	if code, _, _ := post(t, base, goodToken, first, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); code != http.StatusOK {
		t.Errorf("a's session after its refusal: %d", code)
	}
	req, _ := http.NewRequest(http.MethodDelete, base+streamablePath, nil)
	req.Header.Set("Authorization", "Bearer "+goodToken)
	req.Header.Set("Mcp-Session-Id", first)
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	testwait.For(t, "a's quota back after its session ended", func() bool { return s.cfg.Quotas.InUse(principalOf(goodToken), quota.Workspaces) == 0 })
	if code, id, _ := post(t, base, goodToken, "", initializeBody); code != http.StatusOK || id == "" {
		t.Fatalf("a's session after ending one: %d", code)
	}
}

// A crowd of initializes of one principal gets exactly its quota, and
// requests that open nothing give their share back.
func TestCrowdOfOnePrincipalGetsExactlyItsQuota(t *testing.T) {
	const limit, crowd = 2, 8
	s, base := quotaServer(t, quota.Limits{Workspaces: limit})
	var mu sync.Mutex
	statuses := map[int]int{}
	var wg sync.WaitGroup
	for range crowd {
		wg.Go(func() {
			code, _, _ := post(t, base, goodToken, "", initializeBody)
			mu.Lock()
			statuses[code]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if statuses[http.StatusOK] != limit || statuses[http.StatusTooManyRequests] != crowd-limit {
		t.Fatalf("statuses %v, want %d OK and %d 429", statuses, limit, crowd-limit)
	}
	if n := s.cfg.Quotas.InUse(principalOf(goodToken), quota.Workspaces); n != limit {
		t.Errorf("a holds %d, want %d", n, limit)
	}
}

// A 2026-07-28 principal past its quota is refused workspace_open with a
// tool error naming it; closing a handle gives its share back.
func TestWorkspacesQuotaCountsHandles(t *testing.T) {
	s, base := quotaServer(t, quota.Limits{Workspaces: 1})
	const meta = modernMeta
	open := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"workspace_open","arguments":{},` + meta + `}}`
	code, _, body := post(t, base, goodToken, "", open)
	if !strings.Contains(body, handlePrefix) || strings.Contains(body, `"isError":true`) {
		t.Fatalf("a's first handle: HTTP %d %s", code, body)
	}
	handle := handlePrefix + strings.SplitN(strings.SplitN(body, handlePrefix, 2)[1], `"`, 2)[0]
	_, _, body = post(t, base, goodToken, "", open)
	if !strings.Contains(body, `"isError":true`) || !strings.Contains(body, "--quota-workspaces") {
		t.Fatalf("a's second handle: %s", body)
	}
	if _, _, body := post(t, base, otherToken, "", open); strings.Contains(body, `"isError":true`) {
		t.Fatalf("b's handle while a is at its quota: %s", body)
	}
	closeCall := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"workspace_close","arguments":{"workspace":"` + handle + `"},` + meta + `}}`
	if _, _, body := post(t, base, goodToken, "", closeCall); strings.Contains(body, `"isError":true`) {
		t.Fatalf("closing a's handle: %s", body)
	}
	if n := s.cfg.Quotas.InUse(principalOf(goodToken), quota.Workspaces); n != 0 {
		t.Errorf("a holds %d after closing its handle", n)
	}
	if _, _, body := post(t, base, goodToken, "", open); strings.Contains(body, `"isError":true`) {
		t.Fatalf("a's handle after closing one: %s", body)
	}
}

// principalOf is the principal the guard makes of token.
func principalOf(token string) string {
	g := newGuard(HTTPConfig{AuthTokens: []string{token}}, newSessionStore(), nil, nil, nil)
	r, _ := http.NewRequest(http.MethodPost, "/", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	p, _ := g.authenticate(r)
	return p
}

// A crowd of one principal's workspace_open calls gets exactly its quota.
func TestCrowdOfHandleOpensGetsExactlyTheQuota(t *testing.T) {
	const limit, crowd = 2, 8
	s, base := quotaServer(t, quota.Limits{Workspaces: limit})
	open := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"workspace_open","arguments":{},` + modernMeta + `}}`
	var mu sync.Mutex
	opened, refused := 0, 0
	var wg sync.WaitGroup
	for range crowd {
		wg.Go(func() {
			_, _, body := post(t, base, goodToken, "", open)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case strings.Contains(body, "--quota-workspaces"):
				refused++
			case strings.Contains(body, handlePrefix):
				opened++
			}
		})
	}
	wg.Wait()
	if opened != limit || refused != crowd-limit {
		t.Fatalf("%d handles opened and %d refused, want %d and %d", opened, refused, limit, crowd-limit)
	}
	if n := s.cfg.Quotas.InUse(principalOf(goodToken), quota.Workspaces); n != limit {
		t.Errorf("a holds %d, want %d", n, limit)
	}
}

// Every way a handle ends gives its quota back: close, idle expiry.
func TestHandlesGiveTheirQuotaBack(t *testing.T) {
	ledger := quota.New(quota.Limits{Workspaces: 2})
	st := newHandleStore()
	now := time.Unix(1000, 0)
	st.now = func() time.Time { return now }
	hold := func() *quota.Hold {
		h, err := ledger.Reserve("p", quota.Amounts{quota.Workspaces: 1})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	closed, _ := st.open("p", hold())
	st.open("p", hold())
	if _, err := ledger.Reserve("p", quota.Amounts{quota.Workspaces: 1}); err == nil {
		t.Fatal("a third workspace past a quota of 2")
	}
	if _, _, err := st.close(closed, "p"); err != nil {
		t.Fatal(err)
	}
	if n := ledger.InUse("p", quota.Workspaces); n != 1 {
		t.Fatalf("%d held after a close, want 1", n)
	}
	now = now.Add(time.Hour)
	if got := st.expire(time.Minute); len(got) != 1 {
		t.Fatalf("expired %v", got)
	}
	if n := ledger.InUse("p", quota.Workspaces); n != 0 {
		t.Fatalf("%d held after the idle expiry, want 0", n)
	}
}
