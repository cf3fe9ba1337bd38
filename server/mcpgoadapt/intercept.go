package mcpgoadapt

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
)

// Interceptor answers some requests itself, in place of mcp-go, for what
// mcp-go v1.2.1 does not serve as the server needs (the 2026-07-28 tasks
// extension: mcp-go has no tasks/update, and answers no tools/call with a
// task; the error codes that revision gives methods it removed). The zero
// Interceptor answers nothing.
type Interceptor struct {
	// Markers are strings one of which every request Answer may take
	// contains; the others are not decoded again for it (a large
	// tools/call is read as few times as it can be).
	Markers [][]byte
	// Answer is given a request's head and message, with the context the
	// request would be served with, and returns the JSON-RPC answer and
	// true, or false to leave the request to mcp-go. The answer carries
	// the id of msg.
	Answer func(ctx context.Context, head *Head, msg json.RawMessage) (answer any, handled bool)
}

// Chain returns the Interceptor that asks each of interceptors in turn
// and answers with the first that answers.
func Chain(interceptors ...Interceptor) Interceptor {
	var markers [][]byte
	for _, i := range interceptors {
		markers = append(markers, i.Markers...)
	}
	return Interceptor{Markers: markers, Answer: func(ctx context.Context, head *Head, msg json.RawMessage) (any, bool) {
		for _, i := range interceptors {
			if answer, ok := i.answer(ctx, head, msg); ok {
				return answer, true
			}
		}
		return nil, false
	}}
}

// answer runs i on a request (not a notification or an answer) that holds
// one of its markers.
func (i Interceptor) answer(ctx context.Context, head *Head, msg json.RawMessage) (any, bool) {
	if !i.takes(msg) || head == nil || head.Method == nil || head.ID == nil {
		return nil, false
	}
	return i.Answer(ctx, head, msg)
}

// takes reports whether msg may be one of i's.
func (i Interceptor) takes(msg []byte) bool {
	if i.Answer == nil {
		return false
	}
	for _, m := range i.Markers {
		if bytes.Contains(msg, m) {
			return true
		}
	}
	return false
}

// answerStatus is the HTTP status of an intercepted answer, encoded as
// data, to a request of head: 200, except for an error under revision
// 2026-07-28, which gives each error code its status as mcp-go does for
// the errors it writes (method not found 404; a malformed or invalid
// request or its parameters 400).
func answerStatus(head *Head, data []byte) int {
	if head == nil || !mcp.IsModernProtocol(head.ProtocolVersion(mcp.MetaKeyProtocolVersion)) {
		return http.StatusOK
	}
	var answer struct {
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &answer) != nil || answer.Error == nil {
		return http.StatusOK
	}
	switch answer.Error.Code {
	case mcp.METHOD_NOT_FOUND:
		return http.StatusNotFound
	case mcp.INVALID_REQUEST, mcp.INVALID_PARAMS, mcp.PARSE_ERROR, mcp.HEADER_MISMATCH,
		mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, mcp.UNSUPPORTED_PROTOCOL_VERSION:
		return http.StatusBadRequest
	}
	return http.StatusOK
}
