package server

import (
	"context"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

const goodTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// hostileTraceparents are values a careless or hostile client may send
// as its traceparent, each of which must be ignored.
var hostileTraceparents = map[string]any{
	"not a string":      42,
	"not hex":           "00-XYZ-00f067aa0ba902b7-01",
	"a forged line":     goodTraceparent + "\nforged=1",
	"version ff":        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
	"a future version":  "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
	"uppercase":         "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01",
	"an all-zero trace": "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
	"an all-zero span":  "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
	"a short trace id":  "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
	"a long trace id":   "00-4bf92f3577b34da6a3ce929d0e0e47366-00f067aa0ba902b7-01",
	"a short span id":   "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b-01",
	"a long flags":      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-011",
	"extra fields":      goodTraceparent + "-what-ever",
	"huge":              "00-" + strings.Repeat("4bf92f3577b34da6", 1<<16) + "-00f067aa0ba902b7-01",
	"empty":             "",
	"spaces":            " " + goodTraceparent + " ",
}

func TestOnlyAWellFormedTraceparentIsTaken(t *testing.T) {
	if got := traceparentOf(callWithTraceparent(goodTraceparent)); got != goodTraceparent {
		t.Errorf("the good traceparent: got %q", got)
	}
	for name, value := range hostileTraceparents {
		if got := traceparentOf(callWithTraceparent(value)); got != "" {
			t.Errorf("%s: got %q, want none", name, got)
		}
	}
	if got := traceparentOf(mcp.CallToolRequest{}); got != "" {
		t.Errorf("no _meta: %q", got)
	}
}

// TestACallsSpanIsAChildOfItsTraceparent calls a traced handler with
// the SDK's in-memory exporter as the global provider: a call carrying a
// well-formed traceparent gets a span in the caller's trace whose parent
// is the caller's span, even when the caller does not sample (the
// operator decides what is traced); each hostile value leaves the call
// in a new trace of its own, with no parent.
func TestACallsSpanIsAChildOfItsTraceparent(t *testing.T) {
	exporter := tracetest.NewInMemoryExporter()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	previous := otel.GetTracerProvider()
	otel.SetTracerProvider(provider)
	t.Cleanup(func() { otel.SetTracerProvider(previous) })
	s := &Server{}
	handler := s.traced(func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	})
	call := func(value any) tracetest.SpanStub {
		t.Helper()
		exporter.Reset()
		req := callWithTraceparent(value)
		req.Params.Name = "read_file"
		if _, err := handler(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		spans := exporter.GetSpans()
		if len(spans) != 1 {
			t.Fatalf("traceparent %.80v: %d spans, want 1", value, len(spans))
		}
		return spans[0]
	}
	for _, value := range []string{goodTraceparent, strings.TrimSuffix(goodTraceparent, "01") + "00"} {
		span := call(value)
		if span.SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || span.Parent.SpanID().String() != "00f067aa0ba902b7" || !span.Parent.IsRemote() {
			t.Errorf("traceparent %s: span in trace %s under %s (remote %v), want the caller's", value, span.SpanContext.TraceID(), span.Parent.SpanID(), span.Parent.IsRemote())
		}
	}
	for name, value := range hostileTraceparents {
		span := call(value)
		if span.Parent.IsValid() || span.SpanContext.TraceID().String() == "4bf92f3577b34da6a3ce929d0e0e4736" || !span.SpanContext.IsValid() {
			t.Errorf("%s: span %v under %v, want a new trace with no parent", name, span.SpanContext.TraceID(), span.Parent.SpanID())
		}
	}
	if span := call(nil); span.Parent.IsValid() || span.Parent.TraceID() != (trace.TraceID{}) {
		t.Errorf("no traceparent: parent %v", span.Parent)
	}
}

func callWithTraceparent(value any) mcp.CallToolRequest {
	var req mcp.CallToolRequest
	req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{"traceparent": value}}
	return req
}
