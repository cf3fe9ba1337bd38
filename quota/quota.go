// Package quota keeps per-principal quotas: a ledger, keyed by principal
// (a token's digest, an OAuth subject, the local stdio user), of what each
// one holds of a resource, against a limit per resource. A Reserve that
// would pass the limit is refused with an *ExceededError naming the quota,
// its flag, the limit and what is in use; one that fits returns a Hold,
// given back by its Release (at most once, however often called). Checking
// and taking happen under one lock, so concurrent reservations of one
// principal never pass its limit together. A nil *Ledger enforces nothing.
package quota

import (
	"fmt"
	"sync"
)

// Resource is a kind of thing a principal's quota limits.
type Resource int

// The resources a quota can limit.
const (
	// Workspaces counts a principal's workspaces at once: its MCP sessions
	// (revisions 2025) and open workspace handles (revision 2026-07-28).
	Workspaces Resource = iota
)

// quotaInfo describes a resource to the people who meet its limit.
type quotaInfo struct {
	name, flag, unit, remedy string
}

var info = map[Resource]quotaInfo{
	Workspaces: {name: "workspaces", flag: "--quota-workspaces", unit: "workspaces",
		remedy: "close one of your workspaces first (workspace_close for a handle, or end a session with DELETE), or ask the operator to raise --quota-workspaces"},
}

// Name is the resource's name in messages, metrics and audit records.
func (r Resource) Name() string { return info[r].name }

// Limits are the quotas of every principal; 0 leaves a resource unlimited.
type Limits struct {
	// Workspaces caps a principal's sessions plus open handles at once.
	Workspaces int64
}

func (l Limits) of(r Resource) int64 {
	switch r {
	case Workspaces:
		return l.Workspaces
	}
	return 0
}

// Ledger records what each principal holds. It is safe for concurrent use.
type Ledger struct {
	limits Limits
	mu     sync.Mutex
	used   map[string]map[Resource]int64
}

// New returns a ledger enforcing limits, or nil (enforcing nothing) when
// no limit is set.
func New(limits Limits) *Ledger {
	if limits == (Limits{}) {
		return nil
	}
	return &Ledger{limits: limits, used: map[string]map[Resource]int64{}}
}

// ExceededError is a reservation refused past a principal's quota.
type ExceededError struct {
	Resource Resource
	Limit    int64 // the quota
	InUse    int64 // what the principal held when it asked
	Asked    int64 // what it asked for
}

func (e *ExceededError) Error() string {
	i := info[e.Resource]
	return fmt.Sprintf("quota exceeded: %s quota: you hold %d %s and asked for %d more, past the limit of %d per client (%s); %s",
		i.name, e.InUse, i.unit, e.Asked, e.Limit, i.flag, i.remedy)
}

// Reserve takes n of r for principal if its quota leaves room, and returns
// the hold that gives it back; an *ExceededError if not. A nil ledger, or
// an unlimited resource, always grants it (with a hold that does nothing).
func (l *Ledger) Reserve(principal string, r Resource, n int64) (*Hold, error) {
	if l == nil || l.limits.of(r) <= 0 {
		return nil, nil
	}
	limit := l.limits.of(r)
	l.mu.Lock()
	defer l.mu.Unlock()
	held := l.used[principal][r]
	if held+n > limit {
		return nil, &ExceededError{Resource: r, Limit: limit, InUse: held, Asked: n}
	}
	if l.used[principal] == nil {
		l.used[principal] = map[Resource]int64{}
	}
	l.used[principal][r] = held + n
	return &Hold{ledger: l, principal: principal, resource: r, amount: n}, nil
}

// InUse returns what principal holds of r.
func (l *Ledger) InUse(principal string, r Resource) int64 {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.used[principal][r]
}

// Hold is an amount a principal reserved. A nil *Hold releases nothing.
type Hold struct {
	ledger    *Ledger
	principal string
	resource  Resource
	amount    int64
	once      sync.Once
}

// Release gives the hold back; calls after the first do nothing.
func (h *Hold) Release() {
	if h == nil {
		return
	}
	h.once.Do(func() {
		l := h.ledger
		l.mu.Lock()
		defer l.mu.Unlock()
		held := l.used[h.principal]
		held[h.resource] -= h.amount
		if held[h.resource] <= 0 {
			delete(held, h.resource)
		}
		if len(held) == 0 {
			delete(l.used, h.principal)
		}
	})
}
