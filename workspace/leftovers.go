package workspace

import (
	"context"
	"time"
)

// Retry delays for a container whose removal failed when its session ended.
const (
	leftoverRetryMin = time.Second
	leftoverRetryMax = 30 * time.Second
)

// removeLater keeps trying to remove a container whose removal failed when
// its session ended: a Podman service removing a hundred containers at
// once can take longer than --shutdown-timeout over one of them, and the
// container must not outlive the server. Close makes the last attempts.
func (m *Manager) removeLater(name string) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return // Close's leftover pass no longer runs; the next sweep removes it
	}
	m.leftovers.Add(1)
	m.mu.Unlock()
	go func() {
		defer m.leftovers.Done()
		for wait := leftoverRetryMin; ; wait = min(2*wait, leftoverRetryMax) {
			select {
			case <-m.leftoverCtx.Done():
				return
			case <-m.closing:
				// Close is waiting: try again soon, not after the backoff.
				wait = leftoverRetryMin / 10
				time.Sleep(wait)
			case <-time.After(wait):
			}
			ctx, cancel := context.WithTimeout(m.leftoverCtx, m.cfg.APITimeout)
			err := m.discard(ctx, name)
			cancel()
			if err == nil {
				m.log.Info("removed a container whose removal had failed when its session ended", "container", name)
				return
			}
			m.log.Warn("removing a container whose session ended failed again; retrying", "container", name, "err", err)
		}
	}()
}

// finishLeftovers lets the retries run, without their backoff, until ctx
// ends, then stops them.
func (m *Manager) finishLeftovers(ctx context.Context) {
	close(m.closing)
	done := make(chan struct{})
	go func() { m.leftovers.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		m.stopLeftovers()
		<-done
	}
	m.stopLeftovers()
}
