package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/changes"
	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/internal/testwait"
)

func TestPrestartMakesTheContainerBeforeTheFirstCall(t *testing.T) {
	m, eng, _ := newTestManager(t, nil)
	s, _ := m.Session("early")
	s.Prestart(ctx)
	testwait.For(t, "the container", func() bool { return eng.count() == 1 && s.Info().User != "" })
	echo(t, s, "true")
	if eng.creates != 1 {
		t.Errorf("%d containers made, want the prestarted one only", eng.creates)
	}
}

// A session that ends while its container is being made ahead of its first
// call leaves nothing behind, even when Podman made the container after the
// request was cancelled.
func TestSessionEndingDuringPrestartLeavesNoContainer(t *testing.T) {
	m, eng, _ := newTestManager(t, nil)
	eng.createDelay = time.Hour
	s, _ := m.Session("short")
	s.Prestart(ctx)
	testwait.For(t, "the create request", func() bool { return eng.count() == 1 })
	ended := make(chan struct{})
	go func() { m.EndSession(ctx, "short"); close(ended) }()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("ending the session waited for the creation it should have stopped")
	}
	if eng.count() != 0 {
		t.Error("a container made for a session that ended before its first call was left behind")
	}
	if _, err := os.Stat(s.dir); !os.IsNotExist(err) {
		t.Errorf("session directory left behind: %v", err)
	}
}

// A request of a session handled after the session ended (a notification
// processed after its client hung up, a call that raced a DELETE) makes no
// container: the manager remembers the ended ID.
func TestRequestAfterItsSessionEndedMakesNoContainer(t *testing.T) {
	m, eng, _ := newTestManager(t, nil)
	m.EndSession(ctx, "gone-before-its-first-request")
	if _, err := m.Session("gone-before-its-first-request"); !errors.Is(err, ErrSessionEnded) {
		t.Errorf("Session of an ended session = %v, want ErrSessionEnded", err)
	}
	s, _ := m.Session("used")
	echo(t, s, "true")
	m.EndSession(ctx, "used")
	if _, err := m.Session("used"); !errors.Is(err, ErrSessionEnded) {
		t.Errorf("Session after its end = %v, want ErrSessionEnded", err)
	}
	if eng.count() != 0 {
		t.Errorf("%d containers left", eng.count())
	}
}

// The memory of ended sessions is bounded: the oldest IDs are forgotten.
func TestEndedSessionsAreForgottenOldestFirst(t *testing.T) {
	var e endedSessions
	for i := range endedMemory + 10 {
		e.add(fmt.Sprint(i))
	}
	e.add("4000") // already there: not added twice
	if len(e.ids) != endedMemory || len(e.order) != endedMemory {
		t.Fatalf("remembers %d IDs in a ring of %d, want %d", len(e.ids), len(e.order), endedMemory)
	}
	if e.has("0") || e.has("9") || !e.has("10") || !e.has(fmt.Sprint(endedMemory+9)) {
		t.Error("the oldest IDs were not the ones forgotten")
	}
}

func TestCancelledFirstCallLeavesNoContainer(t *testing.T) {
	m, eng, _ := newTestManager(t, nil)
	eng.createDelay = time.Hour
	s, _ := m.Session("impatient")
	c, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := s.Start(c); err == nil {
		t.Fatal("a cancelled start succeeded")
	}
	if eng.count() != 0 {
		t.Error("the container made by a cancelled create request was left behind")
	}
	eng.createDelay = 0
	echo(t, s, "true") // and the next call makes one
}

// A container made from host facts an earlier process recorded is used
// only once the service confirms them; otherwise it is made again.
func TestContainerFromOutdatedHostFactsIsMadeAgain(t *testing.T) {
	m, eng, logs := newTestManager(t, nil)
	eng.recorded = &engine.HostFacts{SELinux: true, Markers: changes.KernelMarkers}
	s, _ := m.Session("s")
	echo(t, s, "true")
	if eng.creates != 2 {
		t.Fatalf("%d containers made, want 2 (one from the record, one from the answer)", eng.creates)
	}
	eng.mu.Lock()
	spec := eng.containers[s.name].spec
	eng.mu.Unlock()
	if spec.SELinux {
		t.Error("the container in use was made from the outdated record")
	}
	if !logs.contains("host changed") {
		t.Error("the remake was not logged")
	}
}

func TestConfirmedHostFactsAreUsedAsRecorded(t *testing.T) {
	m, eng, _ := newTestManager(t, nil)
	eng.recorded = &engine.HostFacts{Markers: changes.KernelMarkers}
	s, _ := m.Session("s")
	echo(t, s, "true")
	if eng.creates != 1 {
		t.Errorf("%d containers made, want 1", eng.creates)
	}
}
