package server

import (
	"regexp"

	"github.com/mark3labs/mcp-go/mcp"
)

// traceparentPattern is a W3C Trace Context traceparent header value,
// version 00: version, trace id, parent id, flags.
var traceparentPattern = regexp.MustCompile(`^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$`)

// traceparentOf returns the W3C traceparent a call carries in its _meta
// (2026-07-28 clients send it there), "" when it has none or one that is not
// well formed: what reaches the logs is only ever a trace id, never text a
// client chose.
func traceparentOf(req mcp.CallToolRequest) string {
	if req.Params.Meta == nil {
		return ""
	}
	tp, _ := req.Params.Meta.AdditionalFields["traceparent"].(string)
	if !traceparentPattern.MatchString(tp) {
		return ""
	}
	return tp
}
