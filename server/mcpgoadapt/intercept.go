package mcpgoadapt

import (
	"bytes"
	"context"
	"encoding/json"
)

// Interceptor answers some requests itself, in place of mcp-go, for what
// mcp-go v1.2.1 does not serve as the server needs (the 2026-07-28 tasks
// extension: mcp-go has no tasks/update, and answers no tools/call with a
// task). The zero Interceptor answers nothing.
type Interceptor struct {
	// Marker is a string every request Answer may take contains; the
	// others are not decoded again for it (a large tools/call is read
	// as few times as it can be).
	Marker []byte
	// Answer is given a request's head and message, with the context the
	// request would be served with, and returns the JSON-RPC answer and
	// true, or false to leave the request to mcp-go. The answer carries
	// the id of msg.
	Answer func(ctx context.Context, head *Head, msg json.RawMessage) (answer any, handled bool)
}

// answer runs i on a request (not a notification or an answer) that holds
// its marker.
func (i Interceptor) answer(ctx context.Context, head *Head, msg json.RawMessage) (any, bool) {
	if !i.takes(msg) || head == nil || head.Method == nil || head.ID == nil {
		return nil, false
	}
	return i.Answer(ctx, head, msg)
}

// takes reports whether msg may be one of i's.
func (i Interceptor) takes(msg []byte) bool {
	return i.Answer != nil && bytes.Contains(msg, i.Marker)
}
