package workspace

import (
	"context"
	"sync"
	"time"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/workspace/steps"
)

// A kept workspace that any server may serve in turn (a 2026-07-28
// handle's, engine.KeptAsk.OnWanted) moves between servers without a new
// container when its engine lets any server drive any container
// (engine.ContainerAdopter: Kubernetes). The holder asked for it closes
// its channel, leaves the container running and only then releases the
// workspace's lease (leaveForAdoption); the server that takes the lease
// relabels the container as its own and opens its own channel to it
// (adoptContainer). The agent serves one channel at a time (a new one
// supersedes the last), and the channel is closed before the lease goes,
// so two servers never drive one agent. Files, running jobs and
// listening processes go on; the port previews of the last holder end.
//
// A server killed leaves its kept workspaces' containers: the sweep keeps
// each while its engine says it awaits adoption (the workspace's lease,
// held by nobody alive, was renewed within the idle timeout: the next
// holder adopts it), and removes it after.

// unadoptedWait is how long a container left for another server waits to
// be adopted before its last holder removes it (the asker gave up); a
// holder that closes sooner removes it then (leftContainers.removeAll).
const unadoptedWait = 2 * time.Minute

// adoptContainer makes s, about to make a container for its kept
// workspace, drive the one its last holder left running instead, if
// there is one; it reports whether it did. One that does not answer is
// removed, and s makes its own.
func adoptContainer(ctx context.Context, s *Session, spec engine.Spec, times *steps.Times) bool {
	adopter, ok := s.m.eng.(engine.ContainerAdopter)
	label, workspace, held := engineHold(s)
	if !ok || held == nil {
		return false
	}
	name, err := adopter.Adopt(ctx, label, workspace, spec.Labels)
	if err != nil {
		s.m.log.Warn("adopting the workspace's container failed; making a new one", "session", s.who.hash(), "workspace", workspace, "err", err)
		return false
	}
	if name == "" {
		return false
	}
	times.Done("adopt")
	own := s.name
	s.name, s.created = name, true
	if err := s.connectLocked(ctx, times); err != nil {
		s.m.log.Warn("the adopted container's agent did not answer; removing it and making a new one", "session", s.who.hash(), "container", name, "err", err)
		s.dropChannelLocked()
		if err := s.m.eng.Remove(ctx, name); err != nil {
			s.m.log.Warn("removing an adopted container that did not answer", "container", name, "err", err)
		}
		s.name, s.created = own, false
		return false
	}
	s.startedAt = time.Now()
	s.jobs.Adopted()
	return true
}

// leaveForAdoption, for a session ending because another server asked for
// its kept workspace, closes the session's channel and leaves its
// container running for that server, reporting whether it did; the
// caller releases the lease after. A container nobody adopts within
// unadoptedWait, or before this server closes, is removed. The caller
// holds the session's lock.
func leaveForAdoption(s *Session) bool {
	if _, ok := s.m.eng.(engine.ContainerAdopter); !ok || !s.created || !leavesForNextServer(s) {
		return false
	}
	s.dropChannelLocked()
	s.created = false
	s.containerQuota.Release()
	s.containerQuota = nil
	s.jobs.ContainerGone()
	logEvent(s.m.log, EventLeftForAdoption, s, time.Now())
	switch {
	case s.roaming != nil && s.roaming.serverClosing.Load():
		// Left as its server closes: the sweep keeps it while it awaits adoption.
	case s.roaming != nil && s.roaming.handedOverUntil.Load() != 0:
		// Handed over: it waits for the taker until the handoff expires,
		// and for the sweep if this server closes first.
		until := time.Unix(0, s.roaming.handedOverUntil.Load())
		s.m.leftForAdoption.add(s.m, s.name, s.key, time.Until(until), true)
	default:
		s.m.leftForAdoption.add(s.m, s.name, s.key, unadoptedWait, false)
	}
	return true
}

// leftContainers are the containers this server left running for another
// server to adopt, each removed after its wait if nobody did, or when the
// server closes first (unless it stays for the sweep): a server that ends
// leaves nothing behind for a workspace nobody took. It is safe for
// concurrent use.
type leftContainers struct {
	mu   sync.Mutex
	left map[string]*leftContainer // by container name
}

// leftContainer is one container of leftContainers.
type leftContainer struct {
	timer *time.Timer
	key   string // the session key it was left with
	// keepOnClose leaves it for the sweep when the server closes (a
	// handed-over roaming workspace's: engine.ContainerAdopter
	// AwaitsAdoption keeps it while its handoff waits).
	keepOnClose bool
}

// add records the container name, left by the session key, and removes
// it after wait unless it was adopted.
func (l *leftContainers) add(m *Manager, name, key string, wait time.Duration, keepOnClose bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.left == nil {
		l.left = map[string]*leftContainer{}
	}
	if c := l.left[name]; c != nil {
		c.timer.Stop()
	}
	l.left[name] = &leftContainer{key: key, keepOnClose: keepOnClose, timer: time.AfterFunc(wait, func() {
		if l.forget(name) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*m.cfg.APITimeout)
			defer cancel()
			removeUnadopted(ctx, m, name, key)
		}
	})}
}

// count returns how many containers wait.
func (l *leftContainers) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.left)
}

// forget drops name's record, reporting whether it was still there.
func (l *leftContainers) forget(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.left[name]
	if !ok {
		return false
	}
	c.timer.Stop()
	delete(l.left, name)
	return true
}

// removeAll removes, now, every container still waiting to be adopted
// but those kept for the sweep: the server is closing, so no later timer
// would.
func (l *leftContainers) removeAll(ctx context.Context, m *Manager) {
	l.mu.Lock()
	waiting := l.left
	l.left = nil
	l.mu.Unlock()
	for name, c := range waiting {
		c.timer.Stop()
		if !c.keepOnClose {
			removeUnadopted(ctx, m, name, c.key)
		}
	}
}

// removeUnadopted removes the container name if it still carries the
// labels of this server's session key: nobody adopted it.
func removeUnadopted(ctx context.Context, m *Manager, name, key string) {
	found, err := m.eng.List(ctx, LabelManaged)
	if err != nil {
		m.log.Warn("checking whether a container left for another server was adopted; the sweep removes it when this server ends", "container", name, "err", err)
		return
	}
	for _, c := range found {
		if c.Name != name || c.Labels[LabelInstance] != m.inst.id || c.Labels[LabelSession] != key {
			continue
		}
		if err := m.discard(ctx, name); err != nil {
			m.log.Warn("removing a container left for another server that did not adopt it", "container", name, "err", err)
			return
		}
		m.log.Info("removed a container left for another server that did not adopt it", "container", name)
	}
}

// awaitsAdoption reports whether a dead server's container with labels
// stays for its kept workspace's next holder (engine.ContainerAdopter
// AwaitsAdoption, with the idle timeout); when the engine cannot tell, it
// stays until a later sweep can.
func awaitsAdoption(ctx context.Context, m *Manager, labels map[string]string) bool {
	adopter, ok := m.eng.(engine.ContainerAdopter)
	name, roaming := labels[LabelWorkspace], labels[LabelRoaming] != ""
	if roaming {
		name = labels[LabelRoaming]
	}
	if !ok || name == "" {
		return false
	}
	idle := m.cfg.IdleTimeout
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	awaits, err := adopter.AwaitsAdoption(ctx, name, roaming, idle)
	if err != nil {
		m.log.Warn("asking whether a dead server's container awaits adoption; it stays until a later sweep", "workspace", name, "err", err)
		return true
	}
	return awaits
}
