package mcpgoadapt

import (
	"context"
	"encoding/json"
	"fmt"
)

// Head is what wink-mcp reads of a JSON-RPC message before mcp-go serves
// it: the id, the method, an answer's result and error, and the few
// members of the params its checks need. A transport decodes it once per
// message (DecodeHead) and carries it in the request's context (WithHead),
// so that the checks mcp-go's hooks run (they are given only the raw
// message) do not each read the whole message again.
type Head struct {
	ID     json.RawMessage `json:"id"`
	Method *string         `json:"method"` // nil in an answer
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
	Params HeadParams      `json:"params"`
	// paramsUnread says the params, or their _meta, are not an object, so
	// none of Params was read.
	paramsUnread bool
}

// HeadParams are the members of a message's params the server reads: each
// is kept as raw JSON, so that no value of a member nobody asked about
// fails the decoding of the others.
type HeadParams struct {
	URI  json.RawMessage `json:"uri"`  // resources/subscribe
	Task json.RawMessage `json:"task"` // a task-augmented tools/call
	// Meta is a map, not a struct, so that its keys match exactly, as
	// the alias rewriting (setMember) finds them.
	Meta map[string]json.RawMessage `json:"_meta"`
}

// bareHead is what every message has to be read as: the head without its
// params.
type bareHead struct {
	ID     json.RawMessage `json:"id"`
	Method *string         `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// DecodeHead reads the head of msg in one pass. It fails only when msg is
// not a JSON object or its method is not a string; params (or a _meta) that
// are not an object leave Params empty (ParamsRead reports false), as the
// server's checks then leave the message to mcp-go, which refuses it.
func DecodeHead(msg []byte) (*Head, error) {
	var h Head
	if json.Unmarshal(msg, &h) == nil {
		return &h, nil
	}
	var bare bareHead // a params of the wrong type is the only failure worth a second pass
	if err := json.Unmarshal(msg, &bare); err != nil {
		return nil, fmt.Errorf("decoding a JSON-RPC message: %w", err)
	}
	return &Head{ID: bare.ID, Method: bare.Method, Result: bare.Result, Error: bare.Error, paramsUnread: true}, nil
}

// MethodName returns the message's method, "" for an answer.
func (h *Head) MethodName() string {
	if h.Method == nil {
		return ""
	}
	return *h.Method
}

// ParamsRead reports whether the params were an object (or absent), so
// that Params holds what the message says.
func (h *Head) ParamsRead() bool { return !h.paramsUnread }

// ProgressToken returns params._meta.progressToken as written, or nil.
func (h *Head) ProgressToken() json.RawMessage { return h.Params.Meta["progressToken"] }

// ProtocolVersion returns the protocol revision params._meta names (the
// sessionless revisions name theirs in every request), "" for none.
func (h *Head) ProtocolVersion(key string) string {
	var v string
	if json.Unmarshal(h.Params.Meta[key], &v) != nil {
		return ""
	}
	return v
}

// URI returns params.uri; ok is false when it is there but not a string.
func (h *Head) URI() (uri string, ok bool) {
	if len(h.Params.URI) == 0 {
		return "", true
	}
	return uri, json.Unmarshal(h.Params.URI, &uri) == nil
}

// AsksForTask reports whether the message asks to run as a task (a
// params.task other than null).
func (h *Head) AsksForTask() bool {
	return len(h.Params.Task) > 0 && string(h.Params.Task) != "null"
}

type headKey struct{}

// WithHead returns ctx carrying the head of the message it serves.
func WithHead(ctx context.Context, h *Head) context.Context {
	return context.WithValue(ctx, headKey{}, h)
}

// HeadOf returns the head of msg: the one its transport put in ctx, or,
// from a transport that put none, msg decoded now.
func HeadOf(ctx context.Context, msg []byte) (*Head, error) {
	if h, ok := ctx.Value(headKey{}).(*Head); ok {
		return h, nil
	}
	return DecodeHead(msg)
}
