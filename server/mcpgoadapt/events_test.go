package mcpgoadapt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	mcpserver "github.com/mark3labs/mcp-go/server"
)

// replay collects what the log replays after id.
func replay(t *testing.T, l *eventLog, session, id string) (string, []string, error) {
	t.Helper()
	var got []string
	stream, err := l.ReplayEventsAfter(context.Background(), session, id, func(_ string, m json.RawMessage) error {
		got = append(got, string(m))
		return nil
	})
	return stream, got, err
}

func TestEventLogReplaysOneStreamOfOneSession(t *testing.T) {
	ctx := context.Background()
	l := newEventLog()
	first, _ := l.StoreEvent(ctx, "s1", "a", json.RawMessage(`1`))
	_, _ = l.StoreEvent(ctx, "s1", "b", json.RawMessage(`other stream`))
	_, _ = l.StoreEvent(ctx, "s2", "a", json.RawMessage(`other session`))
	_, _ = l.StoreEvent(ctx, "s1", "a", json.RawMessage(`2`))

	stream, got, err := replay(t, l, "s1", first)
	if err != nil || stream != "a" || !slices.Equal(got, []string{"2"}) {
		t.Fatalf("replay = %q %v %v, want stream a and [2]", stream, got, err)
	}
	if _, _, err := replay(t, l, "s2", first); !errors.Is(err, mcpserver.ErrUnknownEventID) {
		t.Errorf("another session's event id: err = %v, want ErrUnknownEventID", err)
	}
	if err := l.PurgeSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := replay(t, l, "s1", first); !errors.Is(err, mcpserver.ErrUnknownEventID) {
		t.Errorf("after purge: err = %v, want ErrUnknownEventID", err)
	}
}

func TestEventLogIsBounded(t *testing.T) {
	ctx := context.Background()
	l := newEventLog()
	first, _ := l.StoreEvent(ctx, "s", "a", json.RawMessage(`0`))
	var last string
	for i := 1; i <= maxSessionEvents; i++ {
		last, _ = l.StoreEvent(ctx, "s", "a", json.RawMessage(fmt.Sprint(i)))
	}
	if n := len(l.sessions["s"].events); n != maxSessionEvents {
		t.Errorf("kept %d events, want %d", n, maxSessionEvents)
	}
	if _, _, err := replay(t, l, "s", first); !errors.Is(err, mcpserver.ErrUnknownEventID) {
		t.Errorf("evicted event id: err = %v, want ErrUnknownEventID", err)
	}
	if _, got, err := replay(t, l, "s", last); err != nil || len(got) != 0 {
		t.Errorf("replay after the newest = %v %v, want nothing", got, err)
	}

	big := json.RawMessage(`"` + strings.Repeat("x", maxSessionEventBytes/3) + `"`)
	for range 4 {
		_, _ = l.StoreEvent(ctx, "s", "a", big)
	}
	if b := l.sessions["s"].bytes; b > maxSessionEventBytes {
		t.Errorf("kept %d bytes, want at most %d", b, maxSessionEventBytes)
	}
}
