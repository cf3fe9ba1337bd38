package workspace

import (
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/internal/testwait"
	"github.com/wink-mcp/wink-mcp/quota"
)

// A container holds its memory and CPU limits against its principal's
// quota while it exists: past the quota no container is made and the call
// says why; another principal is untouched; removing a container (the
// session's end) gives its share back.
func TestContainersHoldTheirLimitsAgainstTheQuota(t *testing.T) {
	ledger := quota.New(quota.Limits{MemoryBytes: DefaultMemoryBytes, MilliCPUs: 2000})
	m, eng, _ := newTestManager(t, func(c *Config) { c.Quotas = ledger })
	m.Register("a1", SessionOptions{Principal: "a"})
	m.Register("a2", SessionOptions{Principal: "a"})
	m.Register("b1", SessionOptions{Principal: "b"})
	a1, _ := m.Session("a1")
	a2, _ := m.Session("a2")
	b1, _ := m.Session("b1")
	echo(t, a1, "true")
	if got := ledger.InUse("a", quota.MemoryBytes); got != DefaultMemoryBytes {
		t.Fatalf("a's container holds %d bytes, want %d", got, DefaultMemoryBytes)
	}
	_, err := a2.Exec(ctx, ExecRequest{Argv: []string{"true"}})
	if err == nil || !strings.Contains(err.Error(), "memory quota") || !strings.Contains(err.Error(), "--quota-memory") {
		t.Fatalf("a's second container: %v, want the memory quota refusal", err)
	}
	if eng.count() != 1 {
		t.Errorf("%d containers after a refusal, want 1", eng.count())
	}
	echo(t, b1, "true") // b is not touched by a's quota
	echo(t, a1, "true") // nor is what a holds
	m.EndSession(ctx, "a1")
	if got := ledger.InUse("a", quota.MemoryBytes); got != 0 {
		t.Fatalf("a holds %d bytes after its container went", got)
	}
	echo(t, a2, "true")
	if got := ledger.InUse("a", quota.MilliCPUs); got != 1000 {
		t.Errorf("a holds %d milli-CPUs, want 1000", got)
	}
}

// A pooled container counts from when a session takes it, not while it
// waits in the pool; past the quota the session gets no pooled container.
func TestPooledContainersCountFromTheirTaking(t *testing.T) {
	ledger := quota.New(quota.Limits{MemoryBytes: DefaultMemoryBytes})
	m, _, _ := newTestManager(t, func(c *Config) { c.Quotas = ledger; c.Warm = 2 })
	testwait.For(t, "a full pool", func() bool { return len(readyEntries(m.pool)) == 2 })
	if got := ledger.InUse("", quota.MemoryBytes); got != 0 {
		t.Fatalf("waiting pooled containers hold %d bytes", got)
	}
	m.Register("a1", SessionOptions{Principal: "a"})
	m.Register("a2", SessionOptions{Principal: "a"})
	a1, _ := m.Session("a1")
	if got := ledger.InUse("a", quota.MemoryBytes); got != DefaultMemoryBytes {
		t.Fatalf("a pooled container taken holds %d bytes, want %d", got, DefaultMemoryBytes)
	}
	a2, _ := m.Session("a2")
	if a2.created {
		t.Error("a session past its quota got a pooled container")
	}
	if _, err := a2.Exec(ctx, ExecRequest{Argv: []string{"true"}}); err == nil || !strings.Contains(err.Error(), "memory quota") {
		t.Errorf("a's second container: %v", err)
	}
	echo(t, a1, "true")
	m.EndSession(ctx, "a1")
	if got := ledger.InUse("a", quota.MemoryBytes); got != 0 {
		t.Errorf("a holds %d bytes after its pooled container went", got)
	}
}

// A principal's sessions, pooled or not, count their egress against one
// budget, not another principal's.
func TestSessionsShareTheirPrincipalsEgressBudget(t *testing.T) {
	ledger := quota.New(quota.Limits{EgressBytes: 1 << 20})
	m, _, _ := newTestManager(t, func(c *Config) { c.Quotas = ledger; c.Warm = 1 })
	testwait.For(t, "a full pool", func() bool { return len(readyEntries(m.pool)) == 1 })
	m.Register("a1", SessionOptions{Principal: "a"})
	m.Register("a2", SessionOptions{Principal: "a"})
	m.Register("b1", SessionOptions{Principal: "b"})
	a1, _ := m.Session("a1") // from the pool
	a2, _ := m.Session("a2")
	b1, _ := m.Session("b1")
	ledger.Egress("a").Add(1 << 20)
	if !ledger.Egress("a").Over() || ledger.Egress("b").Over() {
		t.Fatal("a's budget should be spent, b's not")
	}
	for _, s := range []*Session{a1, a2} {
		if s.meter.Used() >= s.meter.Max() {
			t.Fatalf("%s's own cap is spent", s.name)
		}
		if s.meter.Budget() != ledger.Egress("a") {
			t.Errorf("session %s does not count against a's budget", s.name)
		}
	}
	if b1.meter.Budget() != ledger.Egress("b") {
		t.Error("b's session does not count against b's budget")
	}
}
