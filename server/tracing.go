package server

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracerName names the server's spans' instrumentation scope.
const tracerName = "github.com/wink-mcp/wink-mcp/server"

// traced makes a span of every tool call that reaches its handler, named
// "tools/call TOOL", with the tool, the session's hash and the outcome;
// the workspace's spans (making the container, the agent's round trip)
// are its children. A call whose _meta carries a well-formed W3C
// traceparent gets the span it names as its parent, so the call joins
// the caller's trace (see withRemoteParent); one that is not well formed
// is ignored and the call starts a trace of its own. Spans go to OpenTelemetry's global tracer provider:
// a no-op unless --otlp-endpoint set one up (see package tracing).
func (s *Server) traced(next mcpserver.ToolHandlerFunc) mcpserver.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		attrs := []attribute.KeyValue{attribute.String("mcp.method.name", string(mcp.MethodToolsCall)), attribute.String("gen_ai.tool.name", req.Params.Name)}
		if session := mcpserver.ClientSessionFromContext(ctx); session != nil && session.SessionID() != "" {
			attrs = append(attrs, attribute.String("wink.session", s.mgr.SessionHash(session.SessionID())))
		}
		ctx, span := otel.Tracer(tracerName).Start(withRemoteParent(ctx, req), string(mcp.MethodToolsCall)+" "+req.Params.Name,
			trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
		defer func() {
			p := recover()
			outcome := callOutcome(res, err, p != nil)
			span.SetAttributes(attribute.String("wink.outcome", string(outcome)))
			if outcome != "ok" {
				span.SetStatus(codes.Error, string(outcome))
			}
			span.End()
			if p != nil {
				panic(p) // observe, outside, turns it into a tool error
			}
		}()
		return next(ctx, req)
	}
}
