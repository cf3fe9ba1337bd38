package server

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/audit"
)

// auditRefusal is the reason of a call refused while the audit log cannot
// be written.
const auditRefusal = "audit_log"

// audited records every tool call that reaches its handler in the audit
// log and the metrics, with its outcome and duration. While the audit log
// cannot be written, it runs no call: each is refused with a tool error
// that says so, and recorded (which, once the log can be written again,
// lifts the refusal).
func (s *Server) audited(next mcpserver.ToolHandlerFunc) mcpserver.ToolHandlerFunc {
	if s.cfg.Audit == nil && s.cfg.Metrics == nil {
		return next
	}
	return func(ctx context.Context, req mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		start := time.Now()
		rec := s.callRecord(ctx, &req)
		if broken := s.cfg.Audit.Err(); broken != nil {
			rec.Outcome, rec.Reason = audit.Refused, auditRefusal
			s.cfg.Metrics.Refused(auditRefusal)
			s.recordCall(rec, start)
			return mcp.NewToolResultError("this server runs no tool calls while it cannot write its audit log (" + broken.Error() +
				"); nothing was done. Tell the server's operator; the next call runs once the log can be written again"), nil
		}
		defer func() {
			p := recover()
			rec.Outcome = callOutcome(res, err, p != nil)
			s.recordCall(rec, start)
			if p != nil {
				panic(p) // observe, outside, turns it into a tool error
			}
		}()
		return next(ctx, req)
	}
}

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
func (s *Server) callRecord(ctx context.Context, req *mcp.CallToolRequest) audit.Record {
	rec := audit.Record{Event: audit.EventCall, Principal: principalFrom(ctx), Tool: req.Params.Name}
	if session := mcpserver.ClientSessionFromContext(ctx); session != nil && session.SessionID() != "" {
		rec.Session = s.mgr.SessionHash(session.SessionID())
	}
	if len(req.Params.RawArguments) > 0 {
		rec.ArgsBytes, rec.ArgsSHA256 = audit.Digest(req.Params.RawArguments)
	} else {
		rec.ArgsBytes, rec.ArgsSHA256 = audit.Digest(req.Params.Arguments)
	}
	return rec
}

// recordCall writes a call's record and counts it.
func (s *Server) recordCall(rec audit.Record, start time.Time) {
	d := time.Since(start)
	rec.DurationMS = float64(d.Microseconds()) / 1000
	s.writeAudit(rec)
	s.cfg.Metrics.CallEnded(rec.Tool, string(rec.Outcome), d)
}

// writeAudit appends rec to the audit log, if there is one. A failure is
// logged at error level and counted, never dropped silently; calls are
// refused until a write succeeds (see audited).
func (s *Server) writeAudit(rec audit.Record) {
	if s.cfg.Audit == nil {
		return
	}
	rec.Time = time.Now()
	if err := s.cfg.Audit.Write(rec); err != nil {
		s.cfg.Metrics.AuditWriteFailed()
		s.log.Error("audit record not written: tool calls are refused until the audit log can be written", "event", rec.Event, "tool", rec.Tool, "err", err)
	}
}

// recordProtocolError records a tool call that mcp-go answered with a
// JSON-RPC error before any handler ran (an unknown tool, unreadable
// parameters): it is an mcp-go OnError hook.
func (s *Server) recordProtocolError(ctx context.Context, _ any, method mcp.MCPMethod, message any, _ error) {
	req, ok := message.(*mcp.CallToolRequest)
	if method != mcp.MethodToolsCall || !ok {
		return
	}
	rec := s.callRecord(ctx, req)
	rec.Outcome = audit.ProtocolError
	s.recordCall(rec, time.Now())
}

// recordSession writes a session's opening or end, and counts it.
func (s *Server) recordSession(ctx context.Context, session mcpserver.ClientSession, event audit.Event) {
	if event == audit.EventSessionOpen {
		s.cfg.Metrics.SessionOpened()
	} else {
		s.cfg.Metrics.SessionClosed()
	}
	s.writeAudit(audit.Record{Event: event, Principal: principalFrom(ctx), Session: s.mgr.SessionHash(session.SessionID())})
}

// recordRefusal writes and counts an HTTP request the guard refused, for
// reason (one of the guard's fixed set). A reason may carry details after a colon ("oauth: the token has
// expired"): the metric's label is the part before it, so that its values
// stay a fixed set; the audit record keeps the whole reason.
func (s *Server) recordRefusal(_ *http.Request, status int, reason string) {
	kind, _, _ := strings.Cut(reason, ":")
	s.cfg.Metrics.Refused(strings.ReplaceAll(kind, " ", "_"))
	s.writeAudit(audit.Record{Event: audit.EventRefused, Reason: strings.ReplaceAll(reason, " ", "_"), Status: status})
}

// countTools tells the metrics the tools' names, the only tool labels
// they use, and where to count containers and egress bytes.
func (s *Server) countTools(all []mcpserver.ServerTool) {
	names := make([]string, 0, len(all))
	for _, t := range all {
		names = append(names, t.Tool.Name)
	}
	s.cfg.Metrics.KnowTools(names)
	counts := s.mgr.Counts()
	s.cfg.Metrics.WatchContainers(counts.Containers, counts.WarmTarget())
	s.cfg.Metrics.WatchEgress(counts.EgressBytes)
}
