package egress

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
)

// Refusal is a connection a proxy refused, as its client was told.
type Refusal struct {
	// Host and Port are what the connection asked for; "" and 0 for one
	// turned away before its request was read (past Config.MaxConns).
	Host string
	Port int
	// Status is the HTTP status of the answer.
	Status int
	// Reason says why it was refused; Remedy what would let it through,
	// "" when the answer suggests nothing.
	Reason, Remedy string
}

// Wording says how a proxy's refusals name its patterns and what would
// allow a host, so that each proxy says what applies to it: a profile's
// setup, say, is not opened by --egress. The zero value speaks of the
// server's --egress.
type Wording struct {
	// Patterns names the patterns' list in "no PATTERNS pattern allows
	// it"; "" for --egress.
	Patterns string
	// Allow is the sentence that says how pattern would be allowed; nil
	// for "Ask the user to start wink-mcp with --egress PATTERN if this
	// host is needed."
	Allow func(pattern string) string
}

func (w Wording) patterns() string {
	if w.Patterns == "" {
		return "--egress"
	}
	return w.Patterns
}

func (w Wording) allow(pattern string) string {
	if w.Allow == nil {
		return fmt.Sprintf("Ask the user to start wink-mcp with --egress %s if this host is needed.", pattern)
	}
	return w.Allow(pattern)
}

// refusal is why a connection was not made, as the model reads it.
type refusal struct {
	status       int
	host, reason string
	port         int
	remedy       string
}

func (f *refusal) write(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Connection", "close")
	w.WriteHeader(f.status)
	_, _ = io.WriteString(w, f.text())
}

// text is the refusal as the client reads it, one line.
func (f *refusal) text() string {
	t := fmt.Sprintf("wink-mcp egress proxy refused %s: %s.", net.JoinHostPort(f.host, strconv.Itoa(f.port)), f.reason)
	if f.remedy != "" {
		t += " " + f.remedy
	}
	return t + "\n"
}

// tell gives f to Config.OnRefusal, if set.
func (s *Session) tell(f Refusal) {
	if s.cfg.OnRefusal != nil {
		s.cfg.OnRefusal(f)
	}
}
