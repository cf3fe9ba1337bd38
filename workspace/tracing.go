package workspace

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracerName names the workspace's spans' instrumentation scope.
const tracerName = "github.com/wink-mcp/wink-mcp/workspace"

// inSpan runs f in an internal span named name. The session's calls make
// "workspace.ensure": getting a channel to the agent, which on a
// session's first call means making and starting the container through
// the engine, and later only a check.
func inSpan(ctx context.Context, name string, f func(context.Context) error) (err error) {
	ctx, span := otel.Tracer(tracerName).Start(ctx, name)
	defer func() { endSpan(span, err) }()
	return f(ctx)
}

// tracedAgentCall runs call, one request to the container's agent, in a
// span "agent OP" (a client span: the agent is the server across the
// channel).
func tracedAgentCall(ctx context.Context, op string, attempt int, call func(context.Context) error) (err error) {
	ctx, span := otel.Tracer(tracerName).Start(ctx, "agent "+op, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("wink.agent.op", op), attribute.Int("wink.agent.attempt", attempt)))
	defer func() { endSpan(span, err) }()
	return call(ctx)
}

// endSpan ends span, marking it failed when err is not nil.
func endSpan(span trace.Span, err error) {
	if err != nil && !errors.Is(err, context.Canceled) {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
