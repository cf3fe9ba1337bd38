package workspace

import (
	"fmt"
	"log/slog"
	"strings"
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
	// Events of a profile's image build (not of a session's container).
	EventSetupStarted = "profile_setup_started"
	EventSetupFailed  = "profile_setup_failed"
	EventImageBuilt   = "profile_image_built"
)

// logEvent logs a lifecycle event of a session's container.
func logEvent(log *slog.Logger, event string, s *Session, start time.Time, attrs ...any) {
	log.Info("workspace "+event, append([]any{
		"event", event,
		"session", s.hash(),
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
