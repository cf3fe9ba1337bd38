// Package quota keeps per-principal quotas: a ledger, keyed by principal
// (a token's digest, an OAuth subject, the local stdio user), of what each
// one holds of each resource, against a limit per resource. A Reserve that
// would pass a limit is refused with an *ExceededError naming the quota,
// its flag, the limit and what is in use; one that fits returns a Hold,
// given back by its Release (at most once, however often called). Checking
// and taking happen under one lock, a leaf that is held for no call out,
// so concurrent reservations of one principal never pass its limit
// together. A nil *Ledger enforces nothing.
package quota

import (
	"fmt"
	"strconv"
	"sync"
)

// Resource is a kind of thing a principal's quota limits.
type Resource int

// The resources a quota can limit.
const (
	// Workspaces counts a principal's workspaces at once: its MCP sessions
	// (revisions 2025) and open workspace handles (revision 2026-07-28).
	Workspaces Resource = iota
	// MemoryBytes sums the memory limits of a principal's containers.
	MemoryBytes
	// MilliCPUs sums the CPU limits of a principal's containers, in
	// thousandths of a CPU.
	MilliCPUs
	// EgressBytes counts the bytes a principal's sessions carried through
	// their egress proxies in the last EgressWindow (an EgressBudget,
	// not reserved).
	EgressBytes
	// CheckpointBytes sums what the checkpoint stores of a principal's
	// workspaces hold, each store's shared objects once (a StoreAccount
	// per store, taken byte by byte as objects are written).
	CheckpointBytes
)

// quotaInfo describes a resource to the people who meet its limit.
type quotaInfo struct {
	name, flag, remedy string
	format             func(int64) string
}

const closeOne = "close one of your workspaces first (workspace_close for a handle, or end a session with DELETE)"

var info = map[Resource]quotaInfo{
	Workspaces: {name: "workspaces", flag: "--quota-workspaces", format: func(n int64) string { return strconv.FormatInt(n, 10) + " workspaces" },
		remedy: closeOne + ", or ask the operator to raise --quota-workspaces"},
	MemoryBytes: {name: "memory", flag: "--quota-memory", format: func(n int64) string { return fmt.Sprintf("%d MiB of memory", n>>20) },
		remedy: closeOne + " to remove its container, switch to a smaller profile, or ask the operator to raise --quota-memory"},
	MilliCPUs: {name: "cpus", flag: "--quota-cpus", format: func(n int64) string { return strconv.FormatFloat(float64(n)/1000, 'f', -1, 64) + " CPUs" },
		remedy: closeOne + " to remove its container, switch to a smaller profile, or ask the operator to raise --quota-cpus"},
	EgressBytes: {name: "egress", flag: "--quota-egress-bytes", format: func(n int64) string { return strconv.FormatInt(n, 10) + " bytes" }},
	CheckpointBytes: {name: "checkpoints", flag: "--quota-checkpoint-bytes", format: func(n int64) string { return strconv.FormatInt(n, 10) + " bytes of checkpoints" },
		remedy: "delete checkpoints you no longer need (workspace_checkpoint_delete, in this or your other workspaces; each frees the bytes no other checkpoint of its workspace shares), remove a kept workspace you no longer need, or ask the operator to raise --quota-checkpoint-bytes"},
}

// Name is the resource's name in messages, metrics and audit records.
func (r Resource) Name() string { return info[r].name }

// Limits are the quotas of every principal; 0 leaves a resource unlimited.
type Limits struct {
	// Workspaces caps a principal's sessions plus open handles at once.
	Workspaces int64
	// MemoryBytes caps the sum of the memory limits of its containers.
	MemoryBytes int64
	// MilliCPUs caps the sum of the CPU limits of its containers, in
	// thousandths of a CPU.
	MilliCPUs int64
	// EgressBytes caps the bytes its sessions' egress proxies carry in
	// any EgressWindow.
	EgressBytes int64
	// CheckpointBytes caps what the checkpoint stores of its workspaces
	// hold together.
	CheckpointBytes int64
}

func (l Limits) of(r Resource) int64 {
	switch r {
	case Workspaces:
		return l.Workspaces
	case MemoryBytes:
		return l.MemoryBytes
	case MilliCPUs:
		return l.MilliCPUs
	case CheckpointBytes:
		return l.CheckpointBytes
	}
	return 0
}

// Amounts are what one reservation takes, by resource.
type Amounts map[Resource]int64

// Ledger records what each principal holds. It is safe for concurrent use.
type Ledger struct {
	limits Limits
	mu     sync.Mutex
	used   map[string]Amounts
	egress map[string]*EgressBudget
	stores map[storeKey]*StoreAccount
	// refused, when set, is told of every refusal (outside the lock).
	refused func(principal string, r Resource)
}

// New returns a ledger enforcing limits, or nil (enforcing nothing) when
// no limit is set.
func New(limits Limits) *Ledger {
	if limits == (Limits{}) {
		return nil
	}
	return &Ledger{limits: limits, used: map[string]Amounts{}, egress: map[string]*EgressBudget{}, stores: map[storeKey]*StoreAccount{}}
}

// OnRefused has f told of every reservation refused from now on, to count
// and audit it; call it before the ledger is shared.
func (l *Ledger) OnRefused(f func(principal string, r Resource)) {
	if l != nil {
		l.refused = f
	}
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
	return fmt.Sprintf("quota exceeded: %s quota: you hold %s and asked for %s more, past the limit of %s per client (%s); %s",
		i.name, i.format(e.InUse), i.format(e.Asked), i.format(e.Limit), i.flag, i.remedy)
}

// Reserve takes amounts for principal if every quota leaves room, all or
// nothing, and returns the hold that gives them back; an *ExceededError
// for the first that does not, told to the OnRefused hook. A nil ledger,
// or unlimited resources, always grant (with a hold that does nothing).
func (l *Ledger) Reserve(principal string, amounts Amounts) (*Hold, error) {
	hold, err := l.Try(principal, amounts)
	if err != nil && l.refused != nil {
		l.refused(principal, err.Resource)
	}
	if err != nil {
		return nil, err
	}
	return hold, nil
}

// Try is Reserve telling no hook of a refusal: for a caller that then
// takes another way, which reserves again and says why if it must.
func (l *Ledger) Try(principal string, amounts Amounts) (*Hold, *ExceededError) {
	if l == nil {
		return nil, nil
	}
	taken := Amounts{}
	for r, n := range amounts {
		if l.limits.of(r) > 0 && n > 0 {
			taken[r] = n
		}
	}
	if len(taken) == 0 {
		return nil, nil
	}
	if err := l.take(principal, taken); err != nil {
		return nil, err
	}
	return &Hold{ledger: l, principal: principal, amounts: taken}, nil
}

// take checks and takes amounts for principal under the lock. A
// checkpoint store's bytes are taken by its StoreAccount.
func (l *Ledger) take(principal string, amounts Amounts) *ExceededError {
	l.mu.Lock()
	defer l.mu.Unlock()
	held := l.used[principal]
	for _, r := range []Resource{Workspaces, MemoryBytes, MilliCPUs} {
		if n, ok := amounts[r]; ok && held[r]+n > l.limits.of(r) {
			return &ExceededError{Resource: r, Limit: l.limits.of(r), InUse: held[r], Asked: n}
		}
	}
	if held == nil {
		held = Amounts{}
		l.used[principal] = held
	}
	for r, n := range amounts {
		held[r] += n
	}
	return nil
}

// Limit returns the quota on r, 0 when it is unlimited.
func (l *Ledger) Limit(r Resource) int64 {
	if l == nil {
		return 0
	}
	return l.limits.of(r)
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

// Hold is what one reservation took. A nil *Hold releases nothing.
type Hold struct {
	ledger    *Ledger
	principal string
	amounts   Amounts
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
		for r, n := range h.amounts {
			held[r] -= n
			if held[r] <= 0 {
				delete(held, r)
			}
		}
		if len(held) == 0 {
			delete(l.used, h.principal)
		}
	})
}
