package metrics

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape serves m on a loopback listener and parses one scrape of it.
func scrape(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	ln, err := Listen(":0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ln.Addr().String(), "127.0.0.1:") {
		t.Fatalf("an empty host listened on %s, want loopback", ln.Addr())
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = m.Serve(ctx, ln, slog.New(slog.DiscardHandler)) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return families
}

// value returns the value of family's sample with labels, -1 if none.
func value(families map[string]*dto.MetricFamily, family string, labels map[string]string) float64 {
	f := families[family]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

// TestMetricsAreRegisteredAndBounded records one of each and reads them
// back through the Prometheus text parser; an unknown tool's name never
// becomes a label.
func TestMetricsAreRegisteredAndBounded(t *testing.T) {
	t.Parallel()
	m := New()
	m.KnowTools([]string{"podman_shell"})
	m.SessionOpened()
	m.SessionOpened()
	m.SessionClosed()
	m.CallEnded("podman_shell", "ok", 20*time.Millisecond)
	m.CallEnded("podman_shell", "tool_error", time.Second)
	m.CallEnded("made_up_"+strings.Repeat("x", 100), "protocol_error", time.Millisecond)
	m.Refused("token")
	m.AuditWriteFailed()
	m.WatchContainers(func() (int, int) { return 2, 3 }, 4)
	m.WatchEgress(func() int64 { return 1234 })
	m.WatchEgressCache(func() CacheCounts {
		return CacheCounts{Hits: 5, Misses: 2, Bypasses: 1, Stored: 2, Evictions: 1, HitBytes: 500, StoredBytes: 300, Bytes: 200, Entries: 1}
	})
	families := scrape(t, m)
	checks := []struct {
		family string
		labels map[string]string
		want   float64
	}{
		{family: "wink_sessions_open", want: 1},
		{family: "wink_tool_calls_total", labels: map[string]string{"tool": "podman_shell", "outcome": "ok"}, want: 1},
		{family: "wink_tool_calls_total", labels: map[string]string{"tool": "podman_shell", "outcome": "tool_error"}, want: 1},
		{family: "wink_tool_calls_total", labels: map[string]string{"tool": "other", "outcome": "protocol_error"}, want: 1},
		{family: "wink_tool_call_duration_seconds", labels: map[string]string{"tool": "podman_shell"}, want: 2},
		{family: "wink_refusals_total", labels: map[string]string{"reason": "token"}, want: 1},
		{family: "wink_audit_write_failures_total", want: 1},
		{family: "wink_containers", labels: map[string]string{"state": "warm"}, want: 2},
		{family: "wink_containers", labels: map[string]string{"state": "in_use"}, want: 3},
		{family: "wink_warm_pool_target", want: 4},
		{family: "wink_egress_bytes_total", want: 1234},
		{family: "wink_egress_cache_requests_total", labels: map[string]string{"result": "hit"}, want: 5},
		{family: "wink_egress_cache_requests_total", labels: map[string]string{"result": "miss"}, want: 2},
		{family: "wink_egress_cache_requests_total", labels: map[string]string{"result": "bypass"}, want: 1},
		{family: "wink_egress_cache_bytes_total", labels: map[string]string{"way": "served"}, want: 500},
		{family: "wink_egress_cache_events_total", labels: map[string]string{"event": "evicted"}, want: 1},
		{family: "wink_egress_cache_size_bytes", want: 200},
		{family: "wink_egress_cache_entries", want: 1},
	}
	for _, c := range checks {
		if got := value(families, c.family, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.family, c.labels, got, c.want)
		}
	}
	for _, f := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if families[f] == nil {
			t.Errorf("%s is missing: the Go and process collectors are not registered", f)
		}
	}
	for _, m := range families["wink_tool_calls_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if strings.HasPrefix(l.GetValue(), "made_up") {
				t.Errorf("an unknown tool's name became a label: %s", l.GetValue())
			}
		}
	}
	var off *Metrics
	off.CallEnded("x", "ok", 0) // a nil Metrics records nothing and does not panic
	off.SessionOpened()
	off.Refused("token")
}

// TestListenNamesTheFlag checks a bad address names --metrics-addr.
func TestListenNamesTheFlag(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"9464", "127.0.0.1:notaport"} {
		if ln, err := Listen(addr); err == nil || !strings.Contains(err.Error(), "--metrics-addr") {
			if ln != nil {
				ln.Close()
			}
			t.Errorf("Listen(%q) = %v, want an error naming --metrics-addr", addr, err)
		}
	}
}
