package workspace

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/egress"
	"github.com/wink-mcp/wink-mcp/internal/testwait"
	"github.com/wink-mcp/wink-mcp/workspace/keep"
)

// The egress count is the session's: the giver's fresh workspace and the
// workspace handed over share it, an attaching session's count is raised
// to the workspace's and counts it from then on, and a profile's proxy
// goes on counting.
func TestEgressMeterSurvivesHandoffAndAttach(t *testing.T) {
	m, _, _ := newTestManager(t, nil)
	m.Register("a", SessionOptions{Principal: "p"})
	m.Register("b", SessionOptions{Principal: "p"})
	a, _ := m.Session("a")
	a.handoffs.egressMeter().RaiseTo(1000)
	h, err := a.handoffs.Handoff(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	fresh, _ := m.Session("a")
	if got := fresh.handoffs.egressMeter(); got != a.handoffs.egressMeter() || got.Used() != 1000 {
		t.Errorf("the giver's fresh workspace counts from %d, on its own meter: %v", got.Used(), got != a.handoffs.egressMeter())
	}
	b, _ := m.Session("b")
	b.handoffs.egressMeter().RaiseTo(10)
	own := b.handoffs.egressMeter()
	if _, err := b.handoffs.Attach(ctx, h.Handle); err != nil {
		t.Fatal(err)
	}
	taken, _ := m.Session("b")
	if taken.handoffs.egressMeter() != own || own.Used() != 1000 {
		t.Errorf("after the attach: the session's own meter %v, at %d; want its own, raised to 1000", taken.handoffs.egressMeter() == own, own.Used())
	}
}

// A waiting handoff holds a slot: the limit is asked with the count of
// waiting workspaces, and its refusal changes nothing.
func TestParkLimitRefusesAHandoff(t *testing.T) {
	m, eng, _ := newTestManager(t, nil)
	m.SetParkLimit(func(waiting int) error {
		if waiting >= 1 {
			return errors.New("past --max-sessions")
		}
		return nil
	})
	m.Register("a", SessionOptions{})
	a, _ := m.Session("a")
	if _, err := a.files.WriteFile(ctx, "f", "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.handoffs.Handoff(ctx, time.Minute); err != nil || parkedIn(m) != 1 {
		t.Fatalf("the first handoff: %v, %d waiting", err, parkedIn(m))
	}
	a2, _ := m.Session("a")
	if _, err := a2.files.WriteFile(ctx, "g", "y"); err != nil {
		t.Fatal(err)
	}
	before := eng.count()
	if _, err := a2.handoffs.Handoff(ctx, time.Minute); err == nil || !strings.Contains(err.Error(), "--max-sessions") {
		t.Fatalf("the second handoff = %v", err)
	}
	if same, _ := m.Session("a"); same != a2 || parkedIn(m) != 1 || eng.count() != before {
		t.Errorf("a refused handoff changed the session (%v), the waiting count (%d) or the containers (%d, was %d)", same != a2, parkedIn(m), eng.count(), before)
	}
}

// parkedIn is how many handed-over workspaces wait in m.
func parkedIn(m *Manager) (n int) {
	m.CountParked(func(waiting int) { n = waiting })
	return n
}

// A kept workspace's record follows its session's egress count while the
// session has it, not only when it is released: a server killed with
// SIGKILL leaves the count for the next owner. A session that takes the
// workspace over records its own meter from then on, and the release
// writes the last count.
func TestKeptWorkspaceRecordsItsEgressAsItGoes(t *testing.T) {
	m, _, _ := newTestManager(t, nil)
	m.Register("a", SessionOptions{Workspace: "w"})
	a, err := m.Session("a")
	if err != nil {
		t.Fatal(err)
	}
	recorded := func() int64 {
		rec, _ := keep.ReadRecord(a.kept.root)
		return rec.EgressBytes
	}
	a.handoffs.egressMeter().RaiseTo(1 << 20)
	testwait.For(t, "the record to hold the count", func() bool { return recorded() == 1<<20 })
	other := egress.NewMeter(0, 3<<20)
	a.handoffs.useMeter(other)
	testwait.For(t, "the record to follow the session's new meter", func() bool { return recorded() == 3<<20 })
	other.RaiseTo(4 << 20)
	m.EndSession(ctx, "a") // the release writes the last count at once
	if got := recorded(); got != 4<<20 {
		t.Errorf("after the release the record holds %d, want %d", got, 4<<20)
	}
}
