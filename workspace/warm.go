package workspace

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"github.com/wink-mcp/wink-mcp/workspace/pool"
)

// MaxWarm bounds Config.Warm.
const MaxWarm = 256

// warmPool is the manager's warm pool of sessions (package pool).
type warmPool = pool.Pool[*Session]

// newWarmPool starts the manager's warm pool (package pool) of size
// sessions that no MCP session owns yet, each with its container started
// and connected.
func newWarmPool(m *Manager, size int) *warmPool {
	return pool.New(size, pool.Deps[*Session]{
		Make:       m.makeWarm,
		End:        func(ctx context.Context, s *Session) { s.end(ctx) },
		Name:       func(s *Session) string { return s.name },
		EndTimeout: m.cfg.APITimeout,
		Log:        m.log,
	})
}

// makeWarm makes and starts a session for the pool; done is its channel's
// end, read now so that the pool checks it without the session's lock,
// which the package's lock order puts before the manager's (see the
// package doc).
func (m *Manager) makeWarm(ctx context.Context) (s *Session, done <-chan struct{}, err error) {
	s = m.newSession("", newWarmKey())
	if _, err = s.Start(poolTurn(ctx)); err != nil {
		return s, nil, err
	}
	s.mu.Lock()
	if s.client != nil {
		done = s.client.Done()
	}
	s.mu.Unlock()
	return s, done, nil
}

// newWarmKey names a pooled container and its directory before any
// session owns it: as random as a session hash, and as long.
func newWarmKey() string {
	var b [sessionHashLen / 2]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
