package integration

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is a small OTLP/HTTP receiver: it takes protobuf
// ExportTraceServiceRequests at /v1/traces and keeps their spans.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want a protobuf POST to /v1/traces", http.StatusBadRequest)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	var req coltrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(raw, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			o.spans = append(o.spans, ss.GetSpans()...)
		}
	}
	o.mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// named returns the spans received with this name.
func (o *otlpReceiver) named(name string) []*tracepb.Span {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range o.spans {
		if s.GetName() == name {
			out = append(out, s)
		}
	}
	return out
}

// childrenOf returns the spans received whose parent is parent.
func (o *otlpReceiver) childrenOf(parent *tracepb.Span) []*tracepb.Span {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range o.spans {
		if bytes.Equal(s.GetTraceId(), parent.GetTraceId()) && bytes.Equal(s.GetParentSpanId(), parent.GetSpanId()) {
			out = append(out, s)
		}
	}
	return out
}

// TestTracingSendsACallsSpans runs the real binary with --otlp-endpoint
// at a receiver in the test and makes one podman_shell call on real
// Podman: the receiver gets the call's span, with the tool and the
// outcome, and, in the same trace under it, the workspace's making of the
// container and the agent's round trip.
func TestTracingSendsACallsSpans(t *testing.T) {
	receiver := &otlpReceiver{}
	collector := httptest.NewServer(receiver)
	t.Cleanup(collector.Close)
	p := start(t, startOptions{args: []string{"--otlp-endpoint", collector.URL}, env: []string{"OTEL_BSP_SCHEDULE_DELAY=200"}})
	if r := p.run("true"); r.ExitCode != 0 {
		t.Fatalf("true: %+v", r)
	}
	var call *tracepb.Span
	waitUntil(t, 20*time.Second, "the call's span at the receiver", func() bool {
		spans := receiver.named("tools/call podman_shell")
		if len(spans) > 0 {
			call = spans[0]
		}
		return call != nil
	})
	attrs := map[string]string{}
	for _, kv := range call.GetAttributes() {
		attrs[kv.GetKey()] = kv.GetValue().GetStringValue()
	}
	if attrs["gen_ai.tool.name"] != "podman_shell" || attrs["wink.outcome"] != "ok" || attrs["wink.session"] == "" {
		t.Errorf("the call's span attributes: %v", attrs)
	}
	// The children end before the call's span, so they were sent with it or before.
	ensure, agent := 0, 0
	for _, s := range receiver.childrenOf(call) {
		switch {
		case s.GetName() == "workspace.ensure":
			ensure++
		case strings.HasPrefix(s.GetName(), "agent "):
			agent++
		}
	}
	if ensure == 0 || agent == 0 {
		t.Errorf("under the call's span: %d workspace.ensure and %d agent spans, want both", ensure, agent)
	}
}

// TestTracingJoinsTheCallersTrace: a call whose _meta carries a W3C
// traceparent gets a span in the caller's trace, under the caller's span,
// on both revisions (a 2025-11-25 session and a 2026-07-28 handle); a
// hostile traceparent (uppercase, here) is ignored and its call starts a
// trace of its own.
func TestTracingJoinsTheCallersTrace(t *testing.T) {
	receiver := &otlpReceiver{}
	collector := httptest.NewServer(receiver)
	t.Cleanup(collector.Close)
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokenFile, []byte(testToken), 0o600); err != nil {
		t.Fatal(err)
	}
	p := launch(t, startOptions{transport: "http", args: []string{"--auth-token-file", tokenFile, "--otlp-endpoint", collector.URL, "--warm", "0"},
		env: []string{"OTEL_BSP_SCHEDULE_DELAY=200"}})
	const (
		legacyTrace, legacyParent = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
		modernTrace, modernParent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
		hostileTrace              = "abcdefabcdefabcdefabcdefabcdefab"
	)
	call := func(c *client.Client, traceparent string, args map[string]any) {
		t.Helper()
		var req mcp.CallToolRequest
		req.Params.Name, req.Params.Arguments = "read_file", args
		req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{"traceparent": traceparent}}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := c.CallTool(ctx, req); err != nil {
			t.Fatalf("read_file with traceparent %s: %v", traceparent, err)
		}
	}

	p.connect(map[string]string{"Authorization": "Bearer " + testToken})
	call(p.client, "00-"+legacyTrace+"-"+legacyParent+"-01", map[string]any{"file_path": "missing"})
	call(p.client, "00-"+strings.ToUpper(hostileTrace)+"-"+legacyParent+"-01", map[string]any{"file_path": "missing"})
	modern := modernClient(t, p.url, testToken)
	text, isError := callTool(t, modern, "workspace_open", nil)
	if isError {
		t.Fatalf("workspace_open: %s", text)
	}
	handle := text[strings.LastIndex(text, " ")+1:]
	call(modern, "00-"+modernTrace+"-"+modernParent+"-00", map[string]any{"file_path": "missing", "workspace": handle})

	inTrace := func(trace string) []*tracepb.Span {
		var out []*tracepb.Span
		for _, s := range receiver.named("tools/call read_file") {
			if hex.EncodeToString(s.GetTraceId()) == trace {
				out = append(out, s)
			}
		}
		return out
	}
	waitUntil(t, 20*time.Second, "three read_file spans at the receiver", func() bool { return len(receiver.named("tools/call read_file")) >= 3 })
	for _, want := range []struct{ name, trace, parent string }{{"2025-11-25", legacyTrace, legacyParent}, {"2026-07-28", modernTrace, modernParent}} {
		spans := inTrace(want.trace)
		if len(spans) != 1 || hex.EncodeToString(spans[0].GetParentSpanId()) != want.parent {
			t.Errorf("%s: %d spans in the caller's trace %s, want one under %s: %v", want.name, len(spans), want.trace, want.parent, spans)
		}
	}
	if spans := inTrace(hostileTrace); len(spans) != 0 {
		t.Errorf("an uppercase traceparent was followed: %v", spans)
	}
	for _, s := range receiver.named("tools/call read_file") {
		if trace := hex.EncodeToString(s.GetTraceId()); trace != legacyTrace && trace != modernTrace && len(s.GetParentSpanId()) != 0 {
			t.Errorf("the hostile call's span has a parent: %x", s.GetParentSpanId())
		}
	}
}
