package main

import (
	"context"

	"github.com/wink-mcp/wink-mcp/audit"
	"github.com/wink-mcp/wink-mcp/metrics"
	"github.com/wink-mcp/wink-mcp/server"
)

// observeOptions say where the audit log and the metrics go.
type observeOptions struct {
	auditLog    string // a file, "-" for stderr, "" for none
	metricsAddr string // HOST:PORT, "" for none
}

func bindObserveFlags(b *binder, o *observeOptions) {
	b.str(&o.auditLog, "audit-log", "file that receives one JSON line per tool call, session and refused request (appended, created 0600), - for stderr; off by default", "WINK_AUDIT_LOG")
	b.str(&o.metricsAddr, "metrics-addr", "HOST:PORT serving Prometheus metrics at /metrics on a listener of its own (no host: loopback); off by default", "WINK_METRICS_ADDR")
}

// observe opens the audit log and starts serving the metrics as o says,
// into cfg; the returned function closes the audit log (after the server).
// The metrics stop with ctx.
func observe(ctx context.Context, cfg *server.Config, o observeOptions) (stop func(), err error) {
	if o.auditLog != "" {
		if cfg.Audit, err = audit.Open(o.auditLog); err != nil {
			return nil, err
		}
	}
	if o.metricsAddr != "" {
		ln, err := metrics.Listen(o.metricsAddr)
		if err != nil {
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
		if err := cfg.Audit.Close(); err != nil {
			cfg.Logger.Warn("closing the audit log", "err", err)
		}
	}, nil
}
