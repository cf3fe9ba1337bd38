package workspace

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/wink-mcp/wink-mcp/egress"
	"github.com/wink-mcp/wink-mcp/profiles"
)

// A setup's egress proxy answers a host it refuses with a 403 whose text
// says why, but package managers and curl show only the status ("CONNECT
// tunnel failed, response 403"), so the reason reached nobody but the
// server's log. The setup keeps the refusals its proxy logs, and the error
// of a command that fails says which hosts were refused, why, and how to
// allow them.

// maxSetupRefusals bounds the refusals a setup keeps (each host and port
// once); past it, they are only counted.
const maxSetupRefusals = 16

// setupRefusals are the refusals of one setup's egress proxy. It is safe
// for concurrent use.
type setupRefusals struct {
	profile *profiles.Profile
	policy  egress.Policy
	mu      sync.Mutex
	total   int
	kept    []setupRefusal
	dropped int // refusals of hosts past the kept ones
}

// setupRefusal is one host and port the proxy refused, and its reason.
type setupRefusal struct {
	host   string
	port   int
	status int
	reason string
}

// logger returns a logger that writes to next and keeps the proxy's
// refusals, which it reports only as log records (event "egress",
// allowed false): they are kept whatever next's level.
func (r *setupRefusals) logger(next slog.Handler) *slog.Logger {
	return slog.New(refusalHandler{next: next, into: r})
}

// note keeps rec when it is a refusal.
func (r *setupRefusals) note(rec slog.Record) {
	var f setupRefusal
	event, allowed := "", true
	rec.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "event":
			event = a.Value.String()
		case "allowed":
			allowed = a.Value.Kind() != slog.KindBool || a.Value.Bool()
		case "host":
			f.host = a.Value.String()
		case "port":
			f.port = int(a.Value.Int64())
		case "status":
			f.status = int(a.Value.Int64())
		case "reason":
			f.reason = a.Value.String()
		}
		return true
	})
	if event != "egress" || allowed {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total++
	for _, k := range r.kept {
		if k.host == f.host && k.port == f.port {
			return
		}
	}
	if len(r.kept) < maxSetupRefusals {
		r.kept = append(r.kept, f)
	} else {
		r.dropped++
	}
}

// explain describes the setup's refusals so far, each host and port
// once: "" when there were none. A setup whose profile names no host has
// no proxy and no network at all, which it says instead.
func (r *setupRefusals) explain() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.profile.Egress.Setup) == 0 {
		return fmt.Sprintf("If the command needed the network: the setup has none, because egress.setup of profile %q (%s:%d) names no host; add the hosts it needs there.\n",
			r.profile.Name, r.profile.File, r.profile.Line)
	}
	if r.total == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The setup's egress proxy refused %d connection(s) (tools show such a refusal as a 403 or a failed CONNECT):\n", r.total)
	for _, f := range r.kept {
		fmt.Fprintf(&b, "- %s: %s\n", net.JoinHostPort(f.host, strconv.Itoa(f.port)), r.why(f))
	}
	if r.dropped > 0 {
		fmt.Fprintf(&b, "- and %d refusals of other hosts\n", r.dropped)
	}
	return b.String()
}

// why says why f was refused, as the profile's author can act on it: the
// proxy's own reason speaks of --egress, which the setup does not use.
func (r *setupRefusals) why(f setupRefusal) string {
	p := r.profile
	where := fmt.Sprintf("profile %q (%s:%d)", p.Name, p.File, p.Line)
	allowed := "none"
	if !r.policy.Empty() {
		allowed = strings.Join(r.policy.Patterns(), ", ")
	}
	if _, ok := r.policy.Match(f.host, f.port); !ok {
		return fmt.Sprintf("no pattern of egress.setup allows it (egress.setup: %s). If the setup needs it, add %q to egress.setup of %s; sessions reach it only if egress.session names it too.",
			allowed, suggestPattern(f.host, f.port), where)
	}
	switch {
	case strings.Contains(f.reason, "resolves to"):
		return fmt.Sprintf("%s. Only a pattern naming exactly this host and port reaches such an address: add %q to egress.setup of %s.",
			f.reason, net.JoinHostPort(f.host, strconv.Itoa(f.port)), where)
	case strings.Contains(f.reason, "--egress-max-bytes"):
		return f.reason + ". The setup shares the server's cap: raise --egress-max-bytes."
	}
	return f.reason + "."
}

// suggestPattern is the pattern that allows host on port.
func suggestPattern(host string, port int) string {
	if port == 80 || port == 443 {
		return host
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// refusalHandler passes records on to next and shows each to into.
type refusalHandler struct {
	next slog.Handler
	into *setupRefusals
}

func (h refusalHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelInfo || h.next.Enabled(ctx, l)
}

func (h refusalHandler) Handle(ctx context.Context, rec slog.Record) error {
	h.into.note(rec)
	if h.next.Enabled(ctx, rec.Level) {
		return h.next.Handle(ctx, rec)
	}
	return nil
}

func (h refusalHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return refusalHandler{next: h.next.WithAttrs(attrs), into: h.into}
}

func (h refusalHandler) WithGroup(name string) slog.Handler {
	return refusalHandler{next: h.next.WithGroup(name), into: h.into}
}
