package workspace

import (
	"log/slog"
	"time"

	"github.com/wink-mcp/wink-mcp/workspace/images"
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
	// EventAdopted: a kept workspace's container its last holder left
	// (another server) is driven by this one (session_adopt.go).
	EventAdopted = "adopted"
	// EventLeftForAdoption: a kept workspace's container is left running
	// for the server that asked for it.
	EventLeftForAdoption = "left_for_adoption"
	// Events of a profile's image build (not of a session's container),
	// package images'.
	EventSetupStarted = images.EventSetupStarted
	EventSetupFailed  = images.EventSetupFailed
	EventImageBuilt   = images.EventImageBuilt
)

// logEvent logs a lifecycle event of a session's container.
func logEvent(log *slog.Logger, event string, s *Session, start time.Time, attrs ...any) {
	log.Info("workspace "+event, append([]any{
		"event", event,
		"session", s.who.hash(),
		"container", s.name,
		"duration_ms", time.Since(start).Milliseconds(),
	}, attrs...)...)
}
