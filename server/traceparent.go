package server

import (
	"context"
	"regexp"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// traceparentPattern is a W3C Trace Context traceparent header value,
// version 00: version, trace id, parent id, flags.
var traceparentPattern = regexp.MustCompile(`^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$`)

// zeroTraceID and zeroSpanID are the all-zero ids W3C Trace Context
// calls invalid.
const (
	zeroTraceID = "00000000000000000000000000000000"
	zeroSpanID  = "0000000000000000"
)

// traceparentOf returns the W3C traceparent a call carries in its _meta
// (2026-07-28 clients send it there, 2025 clients may), "" when it has none
// or one that is not well formed (another version, uppercase, a wrong
// length, extra text, an all-zero trace or parent id): what reaches the
// logs and the trace is only ever a trace id, never text a client chose.
func traceparentOf(req mcp.CallToolRequest) string {
	if req.Params.Meta == nil {
		return ""
	}
	tp, _ := req.Params.Meta.AdditionalFields["traceparent"].(string)
	if !traceparentPattern.MatchString(tp) || strings.Contains(tp, "-"+zeroTraceID+"-") || strings.Contains(tp, "-"+zeroSpanID+"-") {
		return ""
	}
	return tp
}

// withRemoteParent returns ctx carrying the span the call's traceparent
// names as a remote parent, so that the call's span joins the caller's
// trace; ctx as it is when the call carries none that is well formed.
// The caller's sampled flag is not followed: whether a call is traced is
// the operator's choice (--otlp-endpoint, OTEL_TRACES_SAMPLER), so a
// client cannot hide its calls from the server's trace by sending 00.
func withRemoteParent(ctx context.Context, req mcp.CallToolRequest) context.Context {
	tp := traceparentOf(req)
	if tp == "" {
		return ctx
	}
	sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": tp}))
	if !sc.IsValid() {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc.WithTraceFlags(sc.TraceFlags().WithSampled(true)))
}
