// Package metrics keeps wink-mcp's Prometheus metrics and serves them on
// a listener of their own. Every label has a bounded set of values: tool
// names are those the server registered (anything else counts as
// "other"), outcomes and refusal reasons are fixed sets; no label carries
// a session, a path or a principal.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// otherTool is the tool label of a call to a tool the server does not have.
const otherTool = "other"

// Metrics holds the server's metrics. It is safe for concurrent use; a
// nil *Metrics records nothing.
type Metrics struct {
	registry     *prometheus.Registry
	tools        map[string]bool
	sessions     prometheus.Gauge
	calls        *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	refusals     *prometheus.CounterVec
	auditFailure prometheus.Counter
}

// New registers the metrics, with the Go runtime and process collectors.
func New() *Metrics {
	m := &Metrics{registry: prometheus.NewRegistry(), tools: map[string]bool{}}
	m.sessions = prometheus.NewGauge(prometheus.GaugeOpts{Name: "wink_sessions_open",
		Help: "MCP sessions open now."})
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wink_tool_calls_total",
		Help: "Tool calls ended, by tool and outcome (ok, tool_error, protocol_error, refused)."}, []string{"tool", "outcome"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "wink_tool_call_duration_seconds",
		Help:    "How long tool calls took, by tool.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}}, []string{"tool"})
	m.refusals = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wink_refusals_total",
		Help: "Requests and calls refused before they ran, by reason."}, []string{"reason"})
	m.auditFailure = prometheus.NewCounter(prometheus.CounterOpts{Name: "wink_audit_write_failures_total",
		Help: "Audit records that could not be written."})
	m.registry.MustRegister(m.sessions, m.calls, m.latency, m.refusals, m.auditFailure,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// KnowTools sets the tool names that are labels of their own; a call to
// any other counts as "other". It must be called before any call is
// counted.
func (m *Metrics) KnowTools(names []string) {
	if m == nil {
		return
	}
	for _, n := range names {
		m.tools[n] = true
	}
}

// WatchContainers makes each scrape ask count for the containers now,
// warm (in the pool) and in use (a session's), as wink_containers{state},
// and reports the pool's target size as wink_warm_pool_target. It must be
// called at most once, before serving.
func (m *Metrics) WatchContainers(count func() (warm, inUse int), warmTarget int) {
	if m == nil {
		return
	}
	state := func(name string, pick func(warm, inUse int) int) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "wink_containers", ConstLabels: prometheus.Labels{"state": name},
			Help: "Workspace containers now, by state: warm (made ahead, waiting in the pool) or in_use (a session's)."},
			func() float64 { return float64(pick(count())) })
	}
	m.registry.MustRegister(
		state("warm", func(warm, _ int) int { return warm }),
		state("in_use", func(_, inUse int) int { return inUse }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "wink_warm_pool_target", Help: "Containers the warm pool keeps ready (--warm)."},
			func() float64 { return float64(warmTarget) }))
}

// WatchEgress makes each scrape ask carried for the bytes the egress
// proxies have carried, as wink_egress_bytes_total. It must be called at
// most once, before serving.
func (m *Metrics) WatchEgress(carried func() int64) {
	if m == nil {
		return
	}
	m.registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "wink_egress_bytes_total",
		Help: "Bytes the sessions' egress proxies carried, both ways."}, func() float64 { return float64(carried()) }))
}

// tool returns the label for a tool name: the name when the server has
// that tool, else "other".
func (m *Metrics) tool(name string) string {
	if m.tools[name] {
		return name
	}
	return otherTool
}

// CallEnded counts a tool call that ended with outcome after d.
func (m *Metrics) CallEnded(tool, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	label := m.tool(tool)
	m.calls.WithLabelValues(label, outcome).Inc()
	m.latency.WithLabelValues(label).Observe(d.Seconds())
}

// SessionOpened counts a session in.
func (m *Metrics) SessionOpened() {
	if m != nil {
		m.sessions.Inc()
	}
}

// SessionClosed counts a session out.
func (m *Metrics) SessionClosed() {
	if m != nil {
		m.sessions.Dec()
	}
}

// Refused counts a refusal; reason comes from a fixed set of the caller's.
func (m *Metrics) Refused(reason string) {
	if m != nil {
		m.refusals.WithLabelValues(reason).Inc()
	}
}

// AuditWriteFailed counts an audit record that could not be written.
func (m *Metrics) AuditWriteFailed() {
	if m != nil {
		m.auditFailure.Inc()
	}
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// Listen opens the metrics listener on addr (HOST:PORT; an empty host is
// the loopback address, not every interface), so a bad address fails at
// start, not later.
func Listen(addr string) (net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %q: want HOST:PORT, e.g. 127.0.0.1:9464: %w", addr, err)
	}
	if host == "" {
		addr = net.JoinHostPort("127.0.0.1", port)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: listening on %s: %w", addr, err)
	}
	return ln, nil
}

// Serve serves /metrics on ln until ctx is done, then closes it.
func (m *Metrics) Serve(ctx context.Context, ln net.Listener, log *slog.Logger) error {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	log.Info("serving metrics", "addr", ln.Addr().String(), "url", "http://"+ln.Addr().String()+"/metrics")
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving metrics: %w", err)
	}
	return nil
}

// CacheCounts are the artefact cache's counters at one scrape.
type CacheCounts struct {
	Hits, Misses, Bypasses, Stored, Evictions, Damaged, Refused int64
	HitBytes, StoredBytes, Bytes, Entries                       int64
}

// WatchEgressCache makes each scrape ask counts for the egress proxy's
// artefact cache: wink_egress_cache_requests_total by result (hit, miss,
// bypass), wink_egress_cache_bytes_total by way (served, stored),
// wink_egress_cache_events_total by event (stored, evicted, damaged,
// refused), and wink_egress_cache_size_bytes and _entries. It must be
// called at most once, before serving.
func (m *Metrics) WatchEgressCache(counts func() CacheCounts) {
	if m == nil {
		return
	}
	counter := func(name, help, label, value string, pick func(CacheCounts) int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: prometheus.Labels{label: value}},
			func() float64 { return float64(pick(counts())) })
	}
	const requests = "Requests for artefacts of --egress-cache hosts, by result: hit (served from disk), miss (fetched), bypass (a range, a condition, a credential, a path not canonical)."
	const bytes = "Bytes of artefacts served from the cache (served) and written to it (stored)."
	const events = "What happened to the cache's entries: stored, evicted (least recently used), damaged (removed and fetched again), refused (not kept: a full disk, a slow first download)."
	m.registry.MustRegister(
		counter("wink_egress_cache_requests_total", requests, "result", "hit", func(c CacheCounts) int64 { return c.Hits }),
		counter("wink_egress_cache_requests_total", requests, "result", "miss", func(c CacheCounts) int64 { return c.Misses }),
		counter("wink_egress_cache_requests_total", requests, "result", "bypass", func(c CacheCounts) int64 { return c.Bypasses }),
		counter("wink_egress_cache_bytes_total", bytes, "way", "served", func(c CacheCounts) int64 { return c.HitBytes }),
		counter("wink_egress_cache_bytes_total", bytes, "way", "stored", func(c CacheCounts) int64 { return c.StoredBytes }),
		counter("wink_egress_cache_events_total", events, "event", "stored", func(c CacheCounts) int64 { return c.Stored }),
		counter("wink_egress_cache_events_total", events, "event", "evicted", func(c CacheCounts) int64 { return c.Evictions }),
		counter("wink_egress_cache_events_total", events, "event", "damaged", func(c CacheCounts) int64 { return c.Damaged }),
		counter("wink_egress_cache_events_total", events, "event", "refused", func(c CacheCounts) int64 { return c.Refused }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "wink_egress_cache_size_bytes", Help: "Bytes the artefact cache holds."},
			func() float64 { return float64(counts().Bytes) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "wink_egress_cache_entries", Help: "Artefacts the cache holds."},
			func() float64 { return float64(counts().Entries) }))
}
