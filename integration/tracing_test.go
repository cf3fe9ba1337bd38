package integration

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

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
