// Package audit writes wink-mcp's audit log: one JSON line per tool call,
// session opened or ended and request refused, for an operator to ship.
// A record carries the arguments' size and SHA-256 digest, never their
// content, and is encoded so that nothing a client sends can break a line
// or forge another record.
package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
	"unicode/utf8"
)

// Event is what a record is about.
type Event string

// The events a record can be about.
const (
	// EventCall is a tool call, whatever its outcome.
	EventCall Event = "call"
	// EventSessionOpen is an MCP session that began.
	EventSessionOpen Event = "session_open"
	// EventSessionClose is an MCP session that ended.
	EventSessionClose Event = "session_close"
	// EventRefused is an HTTP request refused before any MCP processing
	// (bad token, foreign Host or Origin, unknown session, session cap).
	EventRefused Event = "refused"
)

// Outcome is how a tool call ended.
type Outcome string

// The outcomes of a tool call.
const (
	// OK is a call whose result is not an error.
	OK Outcome = "ok"
	// ToolError is a call whose result has isError set: the tool ran and
	// said what was wrong (bad arguments included).
	ToolError Outcome = "tool_error"
	// ProtocolError is a call that failed outside the tool's own answer: a
	// Go error or a panic in its handler, which the server turned into a
	// tool error.
	ProtocolError Outcome = "protocol_error"
	// Refused is a call the server did not run (the audit log could not
	// be written).
	Refused Outcome = "refused"
)

// maxFieldBytes bounds every string field a client can influence, so a
// huge tool name cannot make a huge record.
const maxFieldBytes = 256

// Record is one line of the audit log. Empty fields are left out.
type Record struct {
	// Time is when the event ended (a call's end), in UTC.
	Time time.Time `json:"time"`
	// Event is what the record is about.
	Event Event `json:"event"`
	// Principal is who made the request: over HTTP with bearer tokens, a
	// short digest of the token; "" when no token is required (stdio, or
	// HTTP without tokens).
	Principal string `json:"principal,omitempty"`
	// Session is the MCP session's hash, as the server's logs name it
	// (never the session id itself, which over HTTP is a credential).
	Session string `json:"session,omitempty"`
	// Tool is the tool called.
	Tool string `json:"tool,omitempty"`
	// ArgsBytes is the size of the call's arguments as JSON (see Digest).
	ArgsBytes int `json:"args_bytes,omitempty"`
	// ArgsSHA256 is the hex SHA-256 of the call's arguments as JSON.
	ArgsSHA256 string `json:"args_sha256,omitempty"`
	// Outcome is how the call ended.
	Outcome Outcome `json:"outcome,omitempty"`
	// Reason says why a request or call was refused, from a fixed set.
	Reason string `json:"reason,omitempty"`
	// Status is the HTTP status a refused request was answered with.
	Status int `json:"status,omitempty"`
	// DurationMS is how long the call took, in milliseconds.
	DurationMS float64 `json:"duration_ms,omitempty"`
}

// Digest returns the size and hex SHA-256 of a call's arguments as JSON:
// raw JSON as it is, anything else as encoding/json encodes it (compact,
// object keys sorted), which is how a verifier reproduces it from the
// arguments it sent. Arguments that cannot be encoded digest as "null".
func Digest(args any) (size int, sha string) {
	var raw []byte
	switch a := args.(type) {
	case json.RawMessage:
		raw = a
	case []byte:
		raw = a
	default:
		var err error
		if raw, err = json.Marshal(args); err != nil {
			raw = []byte("null")
		}
	}
	sum := sha256.Sum256(raw)
	return len(raw), hex.EncodeToString(sum[:])
}

// Encode renders r as one line of JSON ending in a newline: strings are
// cut to a bounded length and invalid UTF-8 becomes U+FFFD, and JSON
// escapes every newline and control character, so the line is always one
// valid JSON object.
func Encode(r Record) []byte {
	r.Time = r.Time.UTC()
	r.Principal, r.Session, r.Tool, r.Reason = bounded(r.Principal), bounded(r.Session), bounded(r.Tool), bounded(r.Reason)
	line, err := json.Marshal(r)
	if err != nil { // no field of Record can fail to encode; keep a line anyway
		line = []byte(fmt.Sprintf(`{"time":%q,"event":"encoding_failed"}`, r.Time.Format(time.RFC3339Nano)))
	}
	return append(line, '\n')
}

// bounded cuts s to maxFieldBytes on a rune boundary, marking the cut.
func bounded(s string) string {
	if len(s) <= maxFieldBytes {
		return s
	}
	cut := maxFieldBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Log writes records to one writer, each with a single Write so lines
// never interleave. It is safe for concurrent use; a nil *Log writes
// nothing.
type Log struct {
	mu     sync.Mutex
	w      io.Writer
	closer io.Closer
	err    error // the last write's error, nil after a success
}

// New returns a Log writing to w; Close does not close w.
func New(w io.Writer) *Log { return &Log{w: w} }

// Open returns a Log for path: "-" is standard error; anything else is a
// file opened for appending, created with mode 0600 when missing. The
// caller closes it.
func Open(path string) (*Log, error) {
	if path == "-" {
		return New(os.Stderr), nil
	}
	if path == "" {
		return nil, errors.New("--audit-log: empty path; give a file, or - for standard error")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("--audit-log: opening %s: %w", path, err)
	}
	return &Log{w: f, closer: f}, nil
}

// Write appends r. Its error is also kept for Err until a write succeeds.
func (l *Log) Write(r Record) error {
	if l == nil {
		return nil
	}
	line := Encode(r)
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.w.Write(line)
	if err == nil && n < len(line) {
		err = io.ErrShortWrite
	}
	if err != nil {
		err = fmt.Errorf("writing the audit log: %w", err)
	}
	l.err = err
	return err
}

// Err returns the error of the last write, nil when it succeeded or none
// was made.
func (l *Log) Err() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Close closes the file Open opened; records written after it fail.
func (l *Log) Close() error {
	if l == nil || l.closer == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closer.Close()
}
