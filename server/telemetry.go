package server

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/audit"
	"github.com/wink-mcp/wink-mcp/metrics"
	"github.com/wink-mcp/wink-mcp/quota"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// telemetry writes a server's audit log and counts its metrics: its
// calls, sessions and refused requests. With neither, it does nothing.
type telemetry struct {
	audit   *audit.Log       // nil: no audit log
	metrics *metrics.Metrics // nil: no metrics
	mgr     *workspace.Manager
	log     *slog.Logger
}

// auditRefusal is the reason of a call refused while the audit log cannot
// be written.
const auditRefusal = "audit_log"

// audited records every tool call that reaches its handler in the audit
// log and the metrics, with its outcome and duration. While the audit log
// cannot be written, it runs no call: each is refused with a tool error
// that says so, and recorded (which, once the log can be written again,
// lifts the refusal).
func (t *telemetry) audited(next mcpserver.ToolHandlerFunc) mcpserver.ToolHandlerFunc {
	if t.audit == nil && t.metrics == nil {
		return next
	}
	return func(ctx context.Context, req mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		start := time.Now()
		rec := t.callRecord(ctx, &req)
		if broken := t.audit.Err(); broken != nil {
			rec.Outcome, rec.Reason = audit.Refused, auditRefusal
			t.metrics.Refused(auditRefusal)
			t.recordCall(rec, start)
			return mcp.NewToolResultError("this server runs no tool calls while it cannot write its audit log (" + broken.Error() +
				"); nothing was done. Tell the server's operator; the next call runs once the log can be written again"), nil
		}
		defer func() {
			p := recover()
			rec.Outcome = callOutcome(res, err, p != nil)
			t.recordCall(rec, start)
			if p != nil {
				panic(p) // observe, outside, turns it into a tool error
			}
		}()
		// A 2026-07-28 call names its workspace by a handle, which
		// bindHandle, inside, resolves: it writes the session's hash here.
		return next(context.WithValue(ctx, auditSessionKey{}, &rec.Session), req)
	}
}

// auditSessionKey keys, in a call's context, where bindHandle writes the
// hash of the session a handle names, for the call's audit record.
type auditSessionKey struct{}

// callOutcome names how a handler's call ended.
func callOutcome(res *mcp.CallToolResult, err error, panicked bool) audit.Outcome {
	switch {
	case panicked || err != nil:
		return audit.ProtocolError
	case res != nil && res.IsError:
		return audit.ToolError
	default:
		return audit.OK
	}
}

// callRecord starts the audit record of a tool call.
func (t *telemetry) callRecord(ctx context.Context, req *mcp.CallToolRequest) audit.Record {
	rec := audit.Record{Event: audit.EventCall, Principal: principalFrom(ctx), Tool: req.Params.Name}
	if session := mcpserver.ClientSessionFromContext(ctx); session != nil && session.SessionID() != "" {
		rec.Session = t.mgr.SessionHash(session.SessionID())
	}
	if len(req.Params.RawArguments) > 0 {
		rec.ArgsBytes, rec.ArgsSHA256 = audit.Digest(req.Params.RawArguments)
	} else {
		rec.ArgsBytes, rec.ArgsSHA256 = audit.Digest(req.Params.Arguments)
	}
	return rec
}

// recordCall writes a call's record and counts it.
func (t *telemetry) recordCall(rec audit.Record, start time.Time) {
	d := time.Since(start)
	rec.DurationMS = float64(d.Microseconds()) / 1000
	t.writeAudit(rec)
	t.metrics.CallEnded(rec.Tool, string(rec.Outcome), d)
}

// writeAudit appends rec to the audit log, if there is one. A failure is
// logged at error level and counted, never dropped silently; calls are
// refused until a write succeeds (see audited).
func (t *telemetry) writeAudit(rec audit.Record) {
	if t.audit == nil {
		return
	}
	rec.Time = time.Now()
	if err := t.audit.Write(rec); err != nil {
		t.metrics.AuditWriteFailed()
		t.log.Error("audit record not written: tool calls are refused until the audit log can be written", "event", rec.Event, "tool", rec.Tool, "err", err)
	}
}

// recordProtocolError records a tool call that mcp-go answered with a
// JSON-RPC error before any handler ran (an unknown tool, unreadable
// parameters): it is an mcp-go OnError hook.
func (t *telemetry) recordProtocolError(ctx context.Context, _ any, method mcp.MCPMethod, message any, _ error) {
	req, ok := message.(*mcp.CallToolRequest)
	if method != mcp.MethodToolsCall || !ok {
		return
	}
	rec := t.callRecord(ctx, req)
	rec.Outcome = audit.ProtocolError
	t.recordCall(rec, time.Now())
}

// recordSession writes a session's opening or end, and counts it.
func (t *telemetry) recordSession(ctx context.Context, session mcpserver.ClientSession, event audit.Event) {
	if event == audit.EventSessionOpen {
		t.metrics.SessionOpened()
	} else {
		t.metrics.SessionClosed()
	}
	t.writeAudit(audit.Record{Event: event, Principal: principalFrom(ctx), Session: t.mgr.SessionHash(session.SessionID())})
}

// recordRefusal writes and counts an HTTP request the guard refused, for
// reason (one of the guard's fixed set). A reason may carry details after
// a colon ("oauth: the token has expired"): the metric's label is the part
// before it, so that its values stay a fixed set; the audit record keeps
// the whole reason.
func (t *telemetry) recordRefusal(_ *http.Request, status int, reason string) {
	kind, _, _ := strings.Cut(reason, ":")
	t.metrics.Refused(strings.ReplaceAll(kind, " ", "_"))
	t.writeAudit(audit.Record{Event: audit.EventRefused, Reason: strings.ReplaceAll(reason, " ", "_"), Status: status})
}

// recordQuota writes and counts a request or call refused past
// principal's quota of r (the ledger's refusal hook): reason "quota" in
// the metrics, "quota:NAME" in the audit log.
func (t *telemetry) recordQuota(principal string, r quota.Resource) {
	t.metrics.Refused("quota")
	t.writeAudit(audit.Record{Event: audit.EventRefused, Principal: principal, Reason: "quota:" + r.Name()})
}

// countTools tells the metrics the tools' names, the only tool labels
// they use, and where to count containers and egress bytes.
func (t *telemetry) countTools(all []mcpserver.ServerTool) {
	names := make([]string, 0, len(all))
	for _, t := range all {
		names = append(names, t.Tool.Name)
	}
	t.metrics.KnowTools(names)
	counts := t.mgr.Counts()
	t.metrics.WatchContainers(counts.Containers, counts.WarmTarget())
	t.metrics.WatchEgress(counts.EgressBytes)
	if cache := counts.ArtefactCache(); cache != nil {
		t.metrics.WatchEgressCache(func() metrics.CacheCounts {
			st := cache.Stats()
			size, entries := cache.Usage()
			return metrics.CacheCounts{Hits: st.Hits.Load(), Misses: st.Misses.Load(), Bypasses: st.Bypasses.Load(), Stored: st.Stored.Load(),
				Evictions: st.Evictions.Load(), Damaged: st.Damaged.Load(), Refused: st.Refused.Load(),
				HitBytes: st.HitBytes.Load(), StoredBytes: st.StoredBytes.Load(), Bytes: size, Entries: int64(entries)}
		})
	}
}
