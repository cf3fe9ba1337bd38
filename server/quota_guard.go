package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
)

// holdQuota holds one of principal's workspaces quota in sl for r, a
// request without a session that may open one, if it will; an
// *quota.ExceededError past the quota.
func (g *guard) holdQuota(r *http.Request, sl *slot, principal string) error {
	if g.store.quotas == nil || !opensWorkspace(r, g.maxBody) {
		return nil
	}
	return g.store.holdQuota(sl, principal)
}

// refuseQuota answers a new session past its principal's quota with 429:
// the principal may open one once it has closed another. The ledger's
// refusal hook has counted and audited it.
func (g *guard) refuseQuota(w http.ResponseWriter, r *http.Request, err error) {
	g.log.Info("http request refused", "status", http.StatusTooManyRequests, "reason", "quota", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr)
	w.Header().Set("Connection", "close") // as every refusal: see ServeHTTP
	http.Error(w, err.Error(), http.StatusTooManyRequests)
}

// opensWorkspace reports whether r, a request without a session that may
// open one, will, so that its principal's workspaces quota is held for it:
// an SSE stream does; a streamable HTTP POST does when it is an initialize
// (a 2026-07-28 request comes without a session and opens none). The body
// it reads to know, at most maxBody bytes, is put back whole.
func opensWorkspace(r *http.Request, maxBody int64) bool {
	if r.Method == http.MethodGet {
		return true
	}
	if r.Body == nil {
		return false
	}
	head, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
	if err != nil {
		return false
	}
	var msg struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(head, &msg) == nil && msg.Method == string(mcp.MethodInitialize)
}
