package egress

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A host no pattern names is asked about once, however many connections
// want it at once; yes lets them all through for the session, no refuses
// them saying the user declined, and a question that failed is asked again.
func TestAskTheUser(t *testing.T) {
	const port = 443
	var asked atomic.Int32
	answers := map[string]error{"yes.test": nil, "no.test": errors.New("declined"), "broken.test": errors.New("no client")}
	ask := func(ctx context.Context, host string, p int) (bool, error) {
		asked.Add(1)
		time.Sleep(50 * time.Millisecond)
		err := answers[host]
		if err != nil && err.Error() == "declined" {
			return false, nil
		}
		return err == nil, err
	}
	policy, _ := ParsePolicy(nil)
	// Every name resolves to a public address.
	s := NewSession(Config{Policy: policy, Ask: ask, Resolve: func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("203.0.113.10")}, nil
	}}, "test")
	check := func(host string) (*target, *refusal) { return s.vet(context.Background(), host, port) }
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if _, f := check("yes.test"); f != nil {
				t.Errorf("yes.test refused: %s", f.reason)
			}
		})
	}
	wg.Wait()
	if n := asked.Load(); n != 1 {
		t.Errorf("10 connections at once asked %d times; want once", n)
	}
	if _, f := check("yes.test"); f != nil {
		t.Errorf("after yes: %s", f.reason)
	}
	if _, f := check("no.test"); f == nil || !strings.Contains(f.reason, "declined") || f.status != 403 {
		t.Errorf("declined: %+v", f)
	}
	before := asked.Load()
	check("no.test")
	if asked.Load() != before {
		t.Errorf("a declined host was asked again")
	}
	if _, f := check("broken.test"); f == nil || !strings.Contains(f.reason, "asking the user failed (no client)") {
		t.Errorf("a failed question: %+v", f)
	}
	check("broken.test")
	if asked.Load() != before+2 {
		t.Errorf("a failed question was not asked again (%d questions)", asked.Load()-before)
	}
	if r := userRule("yes.test", port); r.Explicit() {
		t.Errorf("a user's yes reaches private addresses: %+v", r)
	}
}
