package server

import (
	"context"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestTracesACallAndItsWorkspace makes a podman_shell call whose engine
// cannot be reached, with the SDK's in-memory exporter as the global
// provider: a span "tools/call podman_shell" carries the tool and the
// outcome, and the workspace's attempt to make the container is its
// child, marked failed.
func TestTracesACallAndItsWorkspace(t *testing.T) {
	exporter := tracetest.NewInMemoryExporter()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	previous := otel.GetTracerProvider()
	otel.SetTracerProvider(provider)
	t.Cleanup(func() { otel.SetTracerProvider(previous) })

	c, _ := connect(t, newTestServer(t))
	var req mcp.CallToolRequest
	req.Params.Name, req.Params.Arguments = "podman_shell", map[string]any{"command": []string{"true"}}
	res, err := c.CallTool(context.Background(), req)
	if err != nil || !res.IsError {
		t.Fatalf("a call with no Podman: %v, %+v; want a tool error", err, res)
	}
	if err := provider.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := exporter.GetSpans()
	var call, ensure *tracetest.SpanStub
	for i := range spans {
		switch spans[i].Name {
		case "tools/call podman_shell":
			call = &spans[i]
		case "workspace.ensure":
			ensure = &spans[i]
		}
	}
	if call == nil || ensure == nil {
		t.Fatalf("spans %v, want the call's and the workspace's", names(spans))
	}
	want := map[attribute.Key]string{"gen_ai.tool.name": "podman_shell", "wink.outcome": "tool_error", "mcp.method.name": "tools/call"}
	for _, kv := range call.Attributes {
		if w, ok := want[kv.Key]; ok && kv.Value.AsString() == w {
			delete(want, kv.Key)
		}
	}
	if len(want) > 0 || call.Status.Code != codes.Error {
		t.Errorf("call span lacks %v (status %v): %v", want, call.Status, call.Attributes)
	}
	if ensure.Parent.SpanID() != call.SpanContext.SpanID() || ensure.Status.Code != codes.Error {
		t.Errorf("workspace.ensure: parent %v status %v, want a failed child of the call %v", ensure.Parent.SpanID(), ensure.Status, call.SpanContext.SpanID())
	}
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}
