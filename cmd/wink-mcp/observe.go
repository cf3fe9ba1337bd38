package main

import (
	"context"
	"time"

	"github.com/wink-mcp/wink-mcp/audit"
	"github.com/wink-mcp/wink-mcp/metrics"
	"github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/tracing"
)

// traceFlushTimeout bounds the wait at exit for the spans not yet sent.
const traceFlushTimeout = 5 * time.Second

// observeOptions say where the audit log and the metrics go.
type observeOptions struct {
	auditLog    string // a file, "-" for stderr, "" for none
	metricsAddr string // HOST:PORT, "" for none
	otlp        string // the OTLP/HTTP receiver's base URL, "" for no traces
}

// bindObserveFlags binds --audit-log, --otlp-endpoint and --metrics-addr.
func bindObserveFlags(b *binder, o *observeOptions) {
	b.str(&o.auditLog, "audit-log", "file that receives one JSON line per tool call, session and refused request (appended, created 0600), - for stderr; off by default", "WINK_AUDIT_LOG")
	b.str(&o.otlp, "otlp-endpoint", "base URL of an OTLP/HTTP receiver (e.g. http://127.0.0.1:4318) that receives a trace of every tool call; off by default", "WINK_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
	b.str(&o.metricsAddr, "metrics-addr", "HOST:PORT serving Prometheus metrics at /metrics on a listener of its own (no host: loopback); off by default", "WINK_METRICS_ADDR")
}

// observe opens the audit log, starts serving the metrics and sending
// traces as o says, into cfg; the returned function closes the audit log
// and flushes the traces (after the server). The metrics stop with ctx.
func observe(ctx context.Context, cfg *server.Config, o observeOptions) (stop func(), err error) {
	flushTraces := func(context.Context) error { return nil }
	if o.otlp != "" {
		if flushTraces, err = tracing.Start(ctx, o.otlp, server.Version()); err != nil {
			return nil, err
		}
	}
	if o.auditLog != "" {
		if cfg.Audit, err = audit.Open(o.auditLog); err != nil {
			_ = flushTraces(ctx)
			return nil, err
		}
	}
	if o.metricsAddr != "" {
		ln, err := metrics.Listen(o.metricsAddr)
		if err != nil {
			_ = flushTraces(ctx)
			_ = cfg.Audit.Close()
			return nil, err
		}
		cfg.Metrics = metrics.New()
		go func() {
			if err := cfg.Metrics.Serve(ctx, ln, cfg.Logger); err != nil {
				cfg.Logger.Error("metrics stopped", "err", err)
			}
		}()
	}
	return func() {
		flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), traceFlushTimeout)
		defer cancel()
		if err := flushTraces(flush); err != nil {
			cfg.Logger.Warn("traces not all sent", "err", err)
		}
		if err := cfg.Audit.Close(); err != nil {
			cfg.Logger.Warn("closing the audit log", "err", err)
		}
	}, nil
}
