package egress

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Narrowing is what a session's model has taken away from its own egress
// for the rest of the session: patterns dropped, or all of it locked. It
// never adds: a host is allowed only by the server's patterns or the
// user's answer (Config.Ask). It outlives a proxy, like the session's
// Meter, so a change of profile keeps it. It also knows the connections
// open through its proxies, so that what it takes away is cut at once,
// not only refused to the next connection.
type Narrowing struct {
	mu      sync.Mutex
	locked  bool
	dropped map[string]bool // Rule.Pattern of the rules dropped
	live    map[*liveConn]struct{}
}

// liveConn is an open connection through the proxy, and what cuts it.
type liveConn struct {
	pattern string
	cut     func()
}

// NewNarrowing returns a Narrowing that takes nothing away.
func NewNarrowing() *Narrowing { return &Narrowing{} }

// Locked says whether the session's egress is locked.
func (n *Narrowing) Locked() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.locked
}

// Dropped says whether the rule whose pattern is pattern was dropped.
func (n *Narrowing) Dropped(pattern string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.dropped[pattern]
}

// Narrowed is what a Narrowing took away, as a kept workspace records it
// so that the next session on it starts without it.
type Narrowed struct {
	Locked  bool     `json:"locked,omitempty"`
	Dropped []string `json:"dropped,omitempty"`
}

// Taken returns what n took away so far, its patterns sorted.
func (n *Narrowing) Taken() Narrowed {
	n.mu.Lock()
	defer n.mu.Unlock()
	t := Narrowed{Locked: n.locked}
	for p := range n.dropped {
		t.Dropped = append(t.Dropped, p)
	}
	slices.Sort(t.Dropped)
	return t
}

// Take takes away what t took too (an earlier session's, recorded, or
// that of a session taking this one's workspace over): it adds to what n
// took, cuts the open connections it no longer allows (returning how
// many) and never gives anything back.
func (n *Narrowing) Take(t Narrowed) int {
	n.mu.Lock()
	n.locked = n.locked || t.Locked
	for _, p := range t.Dropped {
		if n.dropped == nil {
			n.dropped = map[string]bool{}
		}
		n.dropped[p] = true
	}
	cut := n.takeLocked(func(c *liveConn) bool { return n.locked || n.dropped[c.pattern] })
	n.mu.Unlock()
	return cutAll(cut)
}

// Union is what a and b took away together.
func (a Narrowed) Union(b Narrowed) Narrowed {
	out := Narrowed{Locked: a.Locked || b.Locked, Dropped: slices.Concat(a.Dropped, b.Dropped)}
	slices.Sort(out.Dropped)
	out.Dropped = slices.Compact(out.Dropped)
	return out
}

// Lock refuses every connection from now on and cuts the open ones; it
// returns how many it cut.
func (n *Narrowing) Lock() int {
	n.mu.Lock()
	n.locked = true
	cut := n.takeLocked(func(*liveConn) bool { return true })
	n.mu.Unlock()
	return cutAll(cut)
}

// drop refuses the rule pattern from now on and cuts the connections it
// allowed; it returns how many it cut.
func (n *Narrowing) drop(pattern string) int {
	n.mu.Lock()
	if n.dropped == nil {
		n.dropped = map[string]bool{}
	}
	n.dropped[pattern] = true
	cut := n.takeLocked(func(c *liveConn) bool { return c.pattern == pattern })
	n.mu.Unlock()
	return cutAll(cut)
}

// takeLocked removes the live connections match selects and returns them.
func (n *Narrowing) takeLocked(match func(*liveConn) bool) []*liveConn {
	var out []*liveConn
	for c := range n.live {
		if match(c) {
			out = append(out, c)
			delete(n.live, c)
		}
	}
	return out
}

func cutAll(cs []*liveConn) int {
	for _, c := range cs {
		c.cut()
	}
	return len(cs)
}

// track records an open connection that rule allowed, which cut ends; it
// returns what forgets it, or false when the rule was dropped or egress
// locked since the connection was checked (the caller must not carry it).
func (n *Narrowing) track(rule Rule, cut func()) (forget func(), ok bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.locked || n.dropped[rule.Pattern] {
		return nil, false
	}
	if n.live == nil {
		n.live = map[*liveConn]struct{}{}
	}
	c := &liveConn{pattern: rule.Pattern, cut: cut}
	n.live[c] = struct{}{}
	return func() {
		n.mu.Lock()
		delete(n.live, c)
		n.mu.Unlock()
	}, true
}

// lockRefusal is the answer to a connection after the session locked its egress.
func lockRefusal(host string, port int) *refusal {
	return &refusal{status: http.StatusForbidden, host: host, port: port,
		reason: "egress is locked for the rest of this session (workspace_egress lock)",
		remedy: "Nothing can unlock it: not a restart, an attach, a handoff or a fork of a kept workspace either; only a new workspace starts with the server's egress again."}
}

// droppedRefusal is the answer to a connection that only dropped rules allow.
func droppedRefusal(host string, port int, pattern string) *refusal {
	return &refusal{status: http.StatusForbidden, host: host, port: port,
		reason: fmt.Sprintf("%s was dropped for the rest of this session (workspace_egress drop)", pattern),
		remedy: "Nothing can allow it again: not a restart, an attach, a handoff or a fork of a kept workspace either; only a new workspace starts with the server's egress again."}
}

// Grant is one pattern a session may reach through, and where it came from.
type Grant struct {
	Pattern string
	// Source says who allowed it: the server's --egress, a profile, or the
	// user's answer to a question.
	Source string
	// Dropped says the session dropped it (workspace_egress drop).
	Dropped bool
}

// Grants lists the patterns of the proxy's policy and those the user
// allowed when asked, in that order, each with its source and whether it
// was dropped.
func (s *Session) Grants() []Grant {
	n := s.narrowing()
	var out []Grant
	for _, r := range append(s.cfg.Policy.Rules(), s.asked.allowed()...) {
		out = append(out, Grant{Pattern: r.Pattern, Source: r.Source, Dropped: n.Dropped(r.Pattern)})
	}
	return out
}

// Drop drops the rule whose pattern is pattern (as Grants names it) for
// the rest of the session: new connections it would allow are refused,
// open ones it allowed are cut (their count is returned). A pattern the
// session does not have is an error naming those it has.
func (s *Session) Drop(pattern string) (int, error) {
	p := strings.TrimSpace(pattern)
	var have []string
	for _, g := range s.Grants() {
		if g.Pattern == p {
			return s.narrowing().drop(p), nil
		}
		if !g.Dropped {
			have = append(have, g.Pattern)
		}
	}
	if len(have) == 0 {
		return 0, fmt.Errorf("pattern: %q is not one of this session's egress patterns, and it has none left to drop", pattern)
	}
	return 0, fmt.Errorf("pattern: %q is not one of this session's egress patterns; drop one of: %s (exactly as listed)",
		pattern, strings.Join(slices.Compact(have), ", "))
}

// refuseHijacked answers a CONNECT, already taken from the HTTP server,
// whose rule was dropped, or egress locked, while it was being checked.
func (s *Session) refuseHijacked(down net.Conn, t *target, start time.Time) {
	f := s.narrowedRefusal(t)
	s.logRefused(f, start)
	s.tell(Refusal{Host: f.host, Port: f.port, Status: f.status, Reason: f.reason, Remedy: f.remedy})
	_, _ = io.WriteString(down, "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"+f.text())
}

// narrowedRefusal is the refusal of a connection to t whose rule was
// dropped, or egress locked, while it was being checked.
func (s *Session) narrowedRefusal(t *target) *refusal {
	if s.narrowing().Locked() {
		return lockRefusal(t.host, t.port)
	}
	return droppedRefusal(t.host, t.port, t.rule.Pattern)
}
