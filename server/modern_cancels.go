package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/server/mcpgoadapt"
)

// modernCancels serves notifications/cancelled for the 2026-07-28
// requests of streamable HTTP, per principal. mcp-go keys the requests it
// can cancel by session and id, and a 2026-07-28 request over HTTP has no
// session: every client's request 5 has the same key, so one principal's
// notifications/cancelled would cancel another's call or end its
// subscriptions/listen stream. Here a request is found by its principal
// and id, and mcp-go never sees the notification. It is safe for
// concurrent use.
type modernCancels struct {
	mu       sync.Mutex
	inflight map[cancelKey]*context.CancelFunc
}

// cancelKey names a request in flight: its principal and its id's compact JSON.
type cancelKey struct{ principal, id string }

func newModernCancels() *modernCancels {
	return &modernCancels{inflight: map[cancelKey]*context.CancelFunc{}}
}

// started records a 2026-07-28 request over HTTP, with the function that
// stops it (see withStopper), until its context ends. A second request of
// the principal with the same id in flight takes the key; the first is
// then no longer cancellable, as a client that reuses ids must expect.
func (mc *modernCancels) started(ctx context.Context, id json.RawMessage) {
	stop, ok := ctx.Value(stopperKey{}).(context.CancelFunc)
	if !ok || id == nil {
		return
	}
	key := cancelKey{principalFrom(ctx), compactID(id)}
	entry := &stop
	mc.mu.Lock()
	mc.inflight[key] = entry
	mc.mu.Unlock()
	context.AfterFunc(ctx, func() {
		mc.mu.Lock()
		defer mc.mu.Unlock()
		if mc.inflight[key] == entry {
			delete(mc.inflight, key)
		}
	})
}

// cancel stops principal's request with id, if one is in flight.
func (mc *modernCancels) cancel(principal string, id json.RawMessage) {
	mc.mu.Lock()
	entry := mc.inflight[cancelKey{principal, compactID(id)}]
	mc.mu.Unlock()
	if entry != nil {
		(*entry)()
	}
}

// compactID is an id's compact JSON text.
func compactID(id json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}

// wrap answers a 2026-07-28 notifications/cancelled POST itself (202), for
// the principal that sent it, and passes every other request to next.
// Only a POST that says it is of a 2026-07-28 revision (the
// Mcp-Protocol-Version header, which mcp-go requires of one) is read
// here; the guard has bounded its body already.
func (mc *modernCancels) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
			next.ServeHTTP(w, r)
			return
		}
		var buf bytes.Buffer
		if r.ContentLength > 0 && r.ContentLength <= 64<<20 {
			buf.Grow(int(r.ContentLength)) // the guard's limit stops a body longer than it says
		}
		_, err := buf.ReadFrom(r.Body)
		body := buf.Bytes()
		if err != nil {
			// Too large, or cut off: mcp-go meets the same error and answers it as ever.
			r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
			next.ServeHTTP(w, r)
			return
		}
		if !mayBeCancel(body) {
			r.Body = io.NopCloser(bytes.NewReader(body))
			next.ServeHTTP(w, r)
			return
		}
		head, err := mcpgoadapt.DecodeHead(body)
		if err == nil && (head.ID == nil || string(head.ID) == "null") && head.MethodName() == string(mcp.MethodNotificationCancelled) {
			var n struct {
				Params struct {
					RequestID json.RawMessage `json:"requestId"`
				} `json:"params"`
			}
			if json.Unmarshal(body, &n) == nil && n.Params.RequestID != nil {
				mc.cancel(principalFrom(r.Context()), n.Params.RequestID)
			}
			w.WriteHeader(http.StatusAccepted)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// mayBeCancel reports whether msg may be a notifications/cancelled, without
// decoding it: its method, once decoded, spells "cancelled", so the bytes
// hold that word or a \u escape (the only way JSON writes a letter
// otherwise). A large call rarely holds either, and is then not decoded
// here at all.
func mayBeCancel(msg []byte) bool {
	return bytes.Contains(msg, []byte("cancelled")) || bytes.Contains(msg, []byte(`\u`))
}

// errReader fails every read with its error.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
