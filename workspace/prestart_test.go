package workspace

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/changes"
	"github.com/wink-mcp/wink-mcp/engine"
)

func TestPrestartMakesTheContainerBeforeTheFirstCall(t *testing.T) {
	m, eng, _ := newTestManager(t, nil)
	s, _ := m.Session("early")
	s.Prestart(ctx)
	waitFor(t, "the container", func() bool { return eng.count() == 1 && s.Info().User != "" })
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
	waitFor(t, "the create request", func() bool { return eng.count() == 1 })
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
