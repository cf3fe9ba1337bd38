package workspace

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Lifecycle events, each logged as one record with the attribute event=<name>.
const (
	EventCreated               = "created"
	EventStarted               = "started"
	EventReady                 = "ready"
	EventTakenFromPool         = "taken_from_pool"
	EventChannelReopened       = "channel_reopened"
	EventIdleCleanup           = "idle_cleanup"
	EventRecreatedAfterFailure = "recreated_after_failure"
	EventRemoved               = "removed"
	EventOrphanRemoved         = "orphan_removed"
)

// maxLoggedLine bounds one line logged from a stream.
const maxLoggedLine = 1024

// lineLogger is an io.Writer that logs each complete line written to it as
// one record. It is safe for concurrent use.
type lineLogger struct {
	log   *slog.Logger
	msg   string
	attrs []any
	level slog.Level

	mu  sync.Mutex
	buf []byte
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		var line []byte
		switch i := bytes.IndexByte(l.buf, '\n'); {
		case i >= 0 && i <= maxLoggedLine:
			line, l.buf = l.buf[:i], l.buf[i+1:]
		case len(l.buf) >= maxLoggedLine:
			line, l.buf = l.buf[:maxLoggedLine], l.buf[maxLoggedLine:]
		default:
			return len(p), nil
		}
		if text := string(bytes.TrimRight(line, "\r")); text != "" {
			l.log.Log(context.Background(), l.level, l.msg, append(l.attrs, "line", text)...)
		}
	}
}

// logEvent logs a lifecycle event of a session's container.
func logEvent(log *slog.Logger, event string, s *Session, start time.Time, attrs ...any) {
	log.Info("workspace "+event, append([]any{
		"event", event,
		"session", s.hash,
		"container", s.name,
		"duration_ms", time.Since(start).Milliseconds(),
	}, attrs...)...)
}

// stepTimes records how long each step of making a container took, so the
// ready event breaks a first call's wait down step by step.
type stepTimes struct {
	last  time.Time
	parts []string
}

func newStepTimes() *stepTimes { return &stepTimes{last: time.Now()} }

// done ends the step named step, which began when the previous one ended.
func (t *stepTimes) done(step string) {
	now := time.Now()
	t.parts = append(t.parts, fmt.Sprintf("%s=%dms", step, now.Sub(t.last).Milliseconds()))
	t.last = now
}

func (t *stepTimes) String() string { return strings.Join(t.parts, " ") }
