package mcpgoadapt

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// Bounds of the HTTP id aliases.
const (
	// maxHTTPAliases caps the aliases held at once; past it, ids are passed
	// to mcp-go as they are.
	maxHTTPAliases = 4096
	// httpAliasLife is how long an alias is kept when its answer never
	// comes (a cancelled call); an answered id's alias goes at once.
	httpAliasLife = time.Hour
)

// exactIDs makes the HTTP transports give ids and progress tokens back
// exactly as the client wrote them, as the stdio loop does: a POSTed
// request whose id or token mcp-go would change (it reads numbers as
// float64) reaches it under an alias, and every response body, the event
// streams included, has the alias swapped back. Each alias is a JSON string
// with a random prefix no client id shares, written by mcp-go in one Write.
// A body of one message reaches mcp-go with its Head in the request's
// context.
type exactIDs struct {
	prefix    []byte // `"wink-<nonce>-`
	n         atomic.Int64
	count     atomic.Int64 // aliases held, to skip the scan of bodies when none is
	log       *slog.Logger
	next      http.Handler
	intercept Interceptor

	mu      sync.Mutex
	byAlias map[string]alias  // by the alias's digits
	bySent  map[string]string // session + " " + idKey of an aliased id -> its alias's digits
}

// alias is what an alias stands for.
type alias struct {
	raw  json.RawMessage // the id or token as the client wrote it
	sent string          // for an id, its key in bySent; "" for a progress token
}

// NewExactIDs wraps an mcp-go HTTP transport (streamable HTTP or SSE) so
// that it gives every id and progress token back exactly as the client
// wrote it, and carries the Head of each message it is POSTed in the
// request's context (see HeadOf).
// intercept, if set, may answer a POSTed request (not a batch) in place of
// next, with the context next would be given.
func NewExactIDs(log *slog.Logger, next http.Handler, intercept Interceptor) http.Handler {
	x := newExactIDs(log, next)
	x.intercept = intercept
	return x
}

func newExactIDs(log *slog.Logger, next http.Handler) *exactIDs {
	return &exactIDs{prefix: []byte(`"` + newAliasPrefix()), log: log, next: next,
		byAlias: map[string]alias{}, bySent: map[string]string{}}
}

func (x *exactIDs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w = &aliasWriter{ResponseWriter: w, x: x}
	if r.Method == http.MethodPost && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		if err != nil { // too large or too slow: the transport answers it as before
			r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
		} else {
			if x.intercept.takes(body) {
				if head, err := DecodeHead(body); err == nil {
					if answer, ok := x.intercept.answer(WithHead(r.Context(), head), head, body); ok {
						writeAnswer(w, head, answer)
						return
					}
				}
			}
			body, head := x.rewrite(sessionOf(r), body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if head != nil {
				r = r.WithContext(WithHead(r.Context(), head))
			}
		}
	}
	x.next.ServeHTTP(w, r)
}

// sessionOf returns the session id a request names, on either transport.
func sessionOf(r *http.Request) string {
	if id := r.Header.Get(mcpserver.HeaderKeySessionID); id != "" {
		return id
	}
	return r.URL.Query().Get("sessionId")
}

// rewrite aliases what mcp-go would change in a body of one message or a
// batch; for one request or notification it returns its head too.
func (x *exactIDs) rewrite(session string, body []byte) ([]byte, *Head) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(trimmed, &batch) != nil {
			return body, nil
		}
		for i := range batch {
			batch[i], _ = x.rewriteOne(session, batch[i])
		}
		out, err := marshalExact(batch)
		if err != nil {
			return body, nil
		}
		return out, nil
	}
	return x.rewriteOne(session, body)
}

func (x *exactIDs) rewriteOne(session string, msg json.RawMessage) (json.RawMessage, *Head) {
	head, err := DecodeHead(msg)
	if err == nil {
		_, err = head.clientAnswer() // an error member that is no error object: passed on as it is
	}
	if err != nil || head.Method == nil {
		return msg, nil
	}
	out := msg
	set := func(value json.RawMessage, path ...string) {
		if next, err := setMember(out, value, path...); err == nil {
			out = next
		}
	}
	if *head.Method == string(mcp.MethodNotificationCancelled) {
		if id := member(msg, "params", "requestId"); id != nil {
			x.mu.Lock()
			digits, ok := x.bySent[session+" "+idKey(id)]
			x.mu.Unlock()
			if ok {
				set(x.quote(digits), "params", "requestId")
			}
		}
		return out, head
	}
	if head.ID != nil && validID(head.ID) && !keepsID(head.ID) {
		if digits := x.add(head.ID, session+" "+idKey(head.ID)); digits != "" {
			set(x.quote(digits), "id")
		}
	}
	if token := changedToken(head); token != nil {
		if digits := x.add(token, ""); digits != "" {
			set(x.quote(digits), "params", "_meta", "progressToken")
		}
	}
	return out, head
}

// add records an alias for raw and returns its digits, or "" past the cap.
func (x *exactIDs) add(raw json.RawMessage, sent string) string {
	if x.count.Load() >= maxHTTPAliases {
		x.log.Warn("too many JSON-RPC ids that mcp-go would change are in flight; this one is passed as it is", "cap", maxHTTPAliases)
		return ""
	}
	digits := strconv.FormatInt(x.n.Add(1), 10)
	x.mu.Lock()
	x.byAlias[digits] = alias{raw: raw, sent: sent}
	if sent != "" {
		x.bySent[sent] = digits
	}
	x.mu.Unlock()
	x.count.Add(1)
	time.AfterFunc(httpAliasLife, func() { x.drop(digits, sent) })
	return digits
}

func (x *exactIDs) drop(digits, sent string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.byAlias[digits]; ok {
		delete(x.byAlias, digits)
		x.count.Add(-1)
	}
	if sent != "" && x.bySent[sent] == digits {
		delete(x.bySent, sent)
	}
}

func (x *exactIDs) quote(digits string) json.RawMessage {
	return append(append(append(json.RawMessage(nil), x.prefix...), digits...), '"')
}

// restore swaps every alias in p back for what the client wrote. An id's
// alias appears once, in its answer, and is dropped then; a progress
// token's may appear in many notifications, and lives out its time.
func (x *exactIDs) restore(p []byte) []byte {
	if x.count.Load() == 0 || !bytes.Contains(p, x.prefix) {
		return p
	}
	var out []byte
	for {
		i := bytes.Index(p, x.prefix)
		if i < 0 {
			return append(out, p...)
		}
		rest := p[i+len(x.prefix):]
		end := bytes.IndexByte(rest, '"')
		digits := string(rest[:max(end, 0)])
		x.mu.Lock()
		a, ok := x.byAlias[digits]
		x.mu.Unlock()
		if end < 0 || !ok {
			out = append(out, p[:i+len(x.prefix)]...)
			p = rest
			continue
		}
		if a.sent != "" {
			x.drop(digits, a.sent)
		}
		out = append(append(out, p[:i]...), a.raw...)
		p = rest[end+1:]
	}
}

// aliasWriter swaps aliases back in everything a response writes.
type aliasWriter struct {
	http.ResponseWriter
	x *exactIDs
}

func (w *aliasWriter) Write(p []byte) (int, error) {
	if _, err := w.ResponseWriter.Write(w.x.restore(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush keeps event streams flowing through the wrapper.
func (w *aliasWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *aliasWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// errReader fails every read with err.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// writeAnswer writes an intercepted request's answer as mcp-go writes one
// that opens no stream: a JSON body, with the status the request's
// revision gives it (answerStatus).
func writeAnswer(w http.ResponseWriter, head *Head, answer any) {
	data, err := json.Marshal(answer)
	if err != nil {
		http.Error(w, "the answer could not be encoded", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(answerStatus(head, data))
	_, _ = w.Write(data)
}
