package mcpgoadapt

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	mcpserver "github.com/mark3labs/mcp-go/server"
)

// Bounds of one session's event log.
const (
	maxSessionEvents     = 256
	maxSessionEventBytes = 4 << 20
)

// eventLog is a bounded mcpserver.EventStore: each session keeps only its
// latest events (at most maxSessionEvents and maxSessionEventBytes), so a
// long session cannot grow the server's memory without limit. A client that
// resumes from an evicted event id is told the id is unknown.
//
// Beyond resumption, having a store makes mcp-go deliver every notification
// of a streamable HTTP request exactly once: without one, a notification
// sent just before a tool call returns can be dropped (two goroutines race
// for it; see mark3labs/mcp-go#969, open).
type eventLog struct {
	mu       sync.Mutex
	seq      uint64
	sessions map[string]*sessionEvents
}

// sessionEvents is one session's retained events, oldest first.
type sessionEvents struct {
	events []storedEvent
	bytes  int
}

// storedEvent is one message recorded on one stream.
type storedEvent struct {
	id, stream string
	message    json.RawMessage
}

var _ mcpserver.EventStore = (*eventLog)(nil)

// NewEventLog returns an empty event log, the mcpserver.EventStore of a
// streamable HTTP transport (mcpserver.WithEventStore).
func NewEventLog() mcpserver.EventStore { return newEventLog() }

func newEventLog() *eventLog {
	return &eventLog{sessions: make(map[string]*sessionEvents)}
}

// StoreEvent records message on streamID and returns its event id.
func (l *eventLog) StoreEvent(_ context.Context, sessionID, streamID string, message json.RawMessage) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	se := l.sessions[sessionID]
	if se == nil {
		se = &sessionEvents{}
		l.sessions[sessionID] = se
	}
	l.seq++
	ev := storedEvent{id: strconv.FormatUint(l.seq, 10), stream: streamID, message: append(json.RawMessage(nil), message...)}
	se.events = append(se.events, ev)
	se.bytes += len(ev.message)
	for len(se.events) > maxSessionEvents || (se.bytes > maxSessionEventBytes && len(se.events) > 1) {
		se.bytes -= len(se.events[0].message)
		se.events[0] = storedEvent{}
		se.events = se.events[1:]
	}
	return ev.id, nil
}

// ReplayEventsAfter sends, in order, the retained events of lastEventID's
// stream that followed it, and returns that stream's id.
func (l *eventLog) ReplayEventsAfter(_ context.Context, sessionID, lastEventID string, send func(eventID string, message json.RawMessage) error) (string, error) {
	l.mu.Lock()
	var stream string
	var tail []storedEvent
	found := false
	if se := l.sessions[sessionID]; se != nil {
		for i, ev := range se.events {
			if ev.id == lastEventID {
				found, stream = true, ev.stream
				for _, later := range se.events[i+1:] {
					if later.stream == stream {
						tail = append(tail, later)
					}
				}
				break
			}
		}
	}
	l.mu.Unlock()
	if !found {
		return "", fmt.Errorf("%w: %q (events are kept for the latest %d messages of a session)", mcpserver.ErrUnknownEventID, lastEventID, maxSessionEvents)
	}
	for _, ev := range tail {
		if err := send(ev.id, ev.message); err != nil {
			return "", err
		}
	}
	return stream, nil
}

// PurgeSession forgets an ended session's events.
func (l *eventLog) PurgeSession(_ context.Context, sessionID string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.sessions, sessionID)
	return nil
}
