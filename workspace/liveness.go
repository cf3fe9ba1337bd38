package workspace

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/wink-mcp/wink-mcp/engine"
)

// clusterSweepPeriod is how often a server whose engine holds instances'
// liveness (engine.InstanceLiveness) sweeps the containers of dead
// instances: a replica that dies is replaced by one of another host name
// and never comes back to sweep its own, so the survivors must, while they
// run, not only when they start. A dead instance's containers go within
// its liveness's duration plus this.
const clusterSweepPeriod = 10 * time.Second

// instanceIDPattern is what newInstance makes: 16 hex digits.
var instanceIDPattern = regexp.MustCompile(`^[0-9a-f]{16}$`)

// livenessHold is this instance's liveness in the engine's service, taken
// on first need (Prepare, or the first container) and kept until Close.
type livenessHold struct {
	of   engine.InstanceLiveness // nil when the engine holds none (Podman: the lock file is the liveness)
	inst *instance               // this instance, whose containers are never orphans
	log  *slog.Logger

	mu     sync.Mutex
	hold   engine.InstanceHold
	closed bool // released: no hold is taken again
}

// newLivenessHold returns the hold of eng's liveness, if it has one, for
// the instance inst.
func newLivenessHold(eng engine.Engine, inst *instance, log *slog.Logger) *livenessHold {
	l, _ := eng.(engine.InstanceLiveness)
	return &livenessHold{of: l, inst: inst, log: log}
}

// ensure takes the hold when it is not taken yet, and returns nil when it
// is held: a container may be made, no other server taking it for a dead
// instance's. The error says why not.
func (h *livenessHold) ensure(ctx context.Context, id string) error {
	if h.of == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return ErrSessionEnded
	}
	if h.hold == nil {
		hold, err := h.of.HoldInstance(ctx, id)
		if err != nil {
			return fmt.Errorf("refusing to make workspaces until this server can tell other servers it is alive: %w", err)
		}
		h.hold = hold
	}
	return h.hold.Held()
}

// release deletes the hold, once this instance's containers are gone,
// and keeps one from being taken again (a Prepare that would run late).
func (h *livenessHold) release(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	if h.hold == nil {
		return nil
	}
	err := h.hold.Release(ctx)
	h.hold = nil
	return err
}

// ofDeadInstance decides whether a container with these labels belongs
// to a server instance that the engine says is dead, whatever host made
// it: the rule with engine.InstanceLiveness. As isOrphan, it answers
// false whenever it cannot be sure.
func ofDeadInstance(labels map[string]string, self *instance, alive func(id string) (bool, error)) bool {
	if labels[LabelManaged] != "true" {
		return false
	}
	id := labels[LabelInstance]
	if !instanceIDPattern.MatchString(id) || id == self.id {
		return false
	}
	live, err := alive(id)
	return err == nil && !live
}

// orphanRule returns the rule the sweep judges containers by: the lock
// files of this host (isOrphan); and, when the engine holds instances'
// liveness, that liveness, asked once per instance and sweep. With both, a
// lock file of this host that is there and free is enough (a server
// restarted in the same replica Pod sweeps at once, not after the Lease
// expires); a missing one proves nothing, as it may be another machine's
// of the same host name.
//
// It also returns the instances found dead by their lock files, whose
// liveness may not have expired yet.
func (h *livenessHold) orphanRule(ctx context.Context) (orphan func(labels map[string]string) bool, deadByLock map[string]bool) {
	if h.of == nil {
		return func(labels map[string]string) bool { return isOrphan(labels, h.inst, probeLock) }, nil
	}
	type answer struct {
		alive bool
		err   error
	}
	asked := map[string]answer{}
	alive := func(id string) (bool, error) {
		a, ok := asked[id]
		if !ok {
			a.alive, a.err = h.of.InstanceAlive(ctx, id)
			asked[id] = a
			if a.err != nil {
				h.log.Warn("cannot tell whether a server instance is alive; its containers stay", "instance", id, "err", a.err)
			}
		}
		return a.alive, a.err
	}
	deadByLock = map[string]bool{}
	return func(labels map[string]string) bool {
		if isOrphan(labels, h.inst, freeLockFile) {
			deadByLock[labels[LabelInstance]] = true
			return true
		}
		return ofDeadInstance(labels, h.inst, alive)
	}, deadByLock
}

// freeLockFile is probeLock, but a missing lock file is not a dead
// instance: it says nothing of an instance of another machine.
func freeLockFile(path string) (alive bool, err error) {
	if _, err := os.Lstat(path); err != nil {
		return true, nil
	}
	return probeLock(path)
}

// forgetDeadInstances deletes what dead instances left of their liveness
// in the engine's service, once their containers are swept: the expired,
// and known, those found dead by their lock files.
func (h *livenessHold) forgetDeadInstances(ctx context.Context, known map[string]bool) error {
	if h.of == nil {
		return nil
	}
	dead, err := h.of.ForgetDeadInstances(ctx, slices.Sorted(maps.Keys(known)))
	for _, id := range dead {
		h.log.Info("the liveness of a dead server instance deleted", "instance", id)
	}
	return err
}

// sweepPeriodically sweeps the containers of dead instances every
// clusterSweepPeriod until ctx is done.
func (m *Manager) sweepPeriodically(ctx context.Context) {
	defer close(m.sweeperDone)
	tick := time.NewTicker(clusterSweepPeriod)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		c, cancel := context.WithTimeout(ctx, clusterSweepPeriod)
		removed, err := m.SweepOrphans(c)
		cancel()
		switch {
		case err != nil && ctx.Err() == nil:
			m.log.Warn("periodic orphan sweep incomplete", "removed", removed, "err", err)
		case removed > 0:
			m.log.Info("periodic orphan sweep done", "removed", removed)
		default:
			m.log.Debug("periodic orphan sweep done", "removed", 0)
		}
	}
}
