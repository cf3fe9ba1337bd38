package server

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// Records that concern a session (those with its hash as the attribute
// "session": its container's lifecycle, refusals, recoveries) also go to
// that session's client as notifications/message, once the client has set
// a level with logging/setLevel, at or above it; never to another client,
// and with the values --env-pass passes redacted. Those of a handle's
// workspace go on the stream of the 2026-07-28 call running on it that
// named a level in its _meta.

// clientLogs routes records to the clients they concern.
type clientLogs struct {
	server  atomic.Pointer[Server]
	secrets *strings.Replacer // nil when nothing is redacted
	// wanted holds, by MCP session ID, the sessions that set a level; any
	// says there is one, so records below the log's own level are built.
	wanted sync.Map
	any    atomic.Int32
	// hashes maps the hash logs name a session by to its MCP session ID.
	hashes sync.Map
	// calls maps the hash of a handle's workspace session to the context
	// of a 2026-07-28 call on it that asked for logs (its _meta's level):
	// records of that workspace go on that call's own stream.
	calls sync.Map
}

// clientLogHandler is the slog.Handler of a clientLogs over the log's own.
type clientLogHandler struct {
	next  slog.Handler
	logs  *clientLogs
	attrs []slog.Attr // from WithAttrs, already redacted
}

// handler wraps next so that records also reach their session's client.
func (c *clientLogs) handler(next slog.Handler) slog.Handler {
	return &clientLogHandler{next: next, logs: c}
}

// track records a client session, by the hash logs call it.
func (c *clientLogs) track(hash, id string) { c.hashes.Store(hash, id) }

// forget drops a session that ended.
func (c *clientLogs) forget(hash, id string) {
	c.hashes.Delete(hash)
	if _, ok := c.wanted.LoadAndDelete(id); ok {
		c.any.Add(-1)
	}
}

// callLogs sends the records of the workspace session hash names to the
// 2026-07-28 call of ctx while it runs, if it asked for logs; the returned
// function stops that. The newest such call on a workspace gets them.
func (c *clientLogs) callLogs(ctx context.Context, hash string) func() {
	if info := mcpserver.RequestProtocolInfoFromContext(ctx); info == nil || info.LogLevel == "" {
		return func() {}
	}
	c.calls.Store(hash, ctx)
	c.any.Add(1)
	return func() {
		c.calls.CompareAndDelete(hash, ctx)
		c.any.Add(-1)
	}
}

// want marks a session whose client set a level.
func (c *clientLogs) want(id string) {
	if _, loaded := c.wanted.LoadOrStore(id, true); !loaded {
		c.any.Add(1)
	}
}

func (h *clientLogHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level) || h.logs.any.Load() > 0
}

func (h *clientLogHandler) Handle(ctx context.Context, r slog.Record) error {
	if h.logs.any.Load() > 0 {
		h.forward(r)
	}
	if !h.next.Enabled(ctx, r.Level) {
		return nil
	}
	return h.next.Handle(ctx, r)
}

func (h *clientLogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = h.redact(a)
	}
	return &clientLogHandler{next: h.next.WithAttrs(attrs), logs: h.logs, attrs: append(append([]slog.Attr{}, h.attrs...), red...)}
}

func (h *clientLogHandler) WithGroup(name string) slog.Handler {
	return &clientLogHandler{next: h.next.WithGroup(name), logs: h.logs, attrs: h.attrs}
}

func (h *clientLogHandler) redact(a slog.Attr) slog.Attr {
	if h.logs.secrets == nil {
		return a
	}
	return redactAttr(h.logs.secrets, a)
}

// forward sends r to the client of the session it names, if that client
// asked for logs.
func (h *clientLogHandler) forward(r slog.Record) {
	data := map[string]any{}
	for _, a := range h.attrs {
		data[a.Key] = jsonValue(a.Value)
	}
	r.Attrs(func(a slog.Attr) bool {
		a = h.redact(a)
		data[a.Key] = jsonValue(a.Value)
		return true
	})
	hash, _ := data["session"].(string)
	s := h.logs.server.Load()
	if s == nil {
		return
	}
	message := r.Message
	if h.logs.secrets != nil {
		message = h.logs.secrets.Replace(message)
	}
	data["message"] = message
	notification := mcp.NewLoggingMessageNotification(mcpLevel(r.Level), "wink-mcp", data)
	if call, ok := h.logs.calls.Load(hash); ok {
		// mcp-go sends it at or above the level the call's _meta names.
		_ = s.mcp.SendLogMessageToClient(call.(context.Context), notification)
		return
	}
	v, ok := h.logs.hashes.Load(hash)
	if !ok {
		return
	}
	id := v.(string)
	if _, wanted := h.logs.wanted.Load(id); !wanted {
		return
	}
	session := s.clients.get(id)
	if session == nil {
		return
	}
	ctx := s.mcp.WithContext(context.Background(), session)
	// Best effort and never blocking: a client that does not keep up misses records.
	_ = s.mcp.SendLogMessageToClient(ctx, notification)
}

// jsonValue is an attribute's value as the notification's JSON carries it:
// an error as its message (it would marshal to {}).
func jsonValue(v slog.Value) any {
	v = v.Resolve()
	if err, ok := v.Any().(error); ok {
		return err.Error()
	}
	return v.Any()
}

// mcpLevel maps a slog level to MCP's.
func mcpLevel(l slog.Level) mcp.LoggingLevel {
	switch {
	case l >= slog.LevelError:
		return mcp.LoggingLevelError
	case l >= slog.LevelWarn:
		return mcp.LoggingLevelWarning
	case l >= slog.LevelInfo:
		return mcp.LoggingLevelInfo
	}
	return mcp.LoggingLevelDebug
}
