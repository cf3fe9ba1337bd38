package server

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/quota"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// errUnknownSession is what a session check fails with for an id that was
// never issued, has ended, or belongs to another principal: all look alike,
// so nothing can be learnt by probing.
var errUnknownSession = errors.New("unknown session")

// unconfirmedTTL is how long a session that no request followed since its
// initialize is kept: a client that initializes and never comes back must
// not hold one of the --max-sessions slots for the whole idle timeout.
const unconfirmedTTL = time.Minute

// sessionStore records the HTTP sessions this server issued, the principal
// (a digest of the bearer token, or "" without one) each belongs to, and
// its activity. It is the one place sessions are counted against the cap:
// a request that may open one holds a slot from its headers (the guard's
// check) until its session is recorded or the request is over, so a crowd
// of requests cannot pass the check together. It is safe for concurrent
// use.
type sessionStore struct {
	mu       sync.Mutex
	sessions map[string]*sessionState
	reserved int // the slots held by requests that have not opened their session yet
	now      func() time.Time
	// quotas counts each principal's sessions against its workspaces
	// quota; nil counts nothing.
	quotas *quota.Ledger
}

// slot is a --max-sessions slot a request that may open a session holds:
// reserved until the request opens its session, or is over.
type slot struct {
	held bool   // reserved, and neither a session yet nor released
	id   string // the session it became, once opened
	// quota is the principal's workspaces quota the slot holds, given to
	// its session once opened, or back when the request is over without one.
	quota *quota.Hold
}

// slotKey carries a request's slot in its context.
type slotKey struct{}

// slotFrom returns the slot the guard gave the request of ctx, or nil.
func slotFrom(ctx context.Context) *slot {
	sl, _ := ctx.Value(slotKey{}).(*slot)
	return sl
}

// sessionState is one session's owner and activity.
type sessionState struct {
	principal string
	// inflight counts its requests being served; a session with one is never idle.
	inflight int
	// requests counts the requests that named it; 0 until the client comes back after initialize.
	requests int
	last     time.Time // when a request of it last began or ended
	// initialized says its initialize was answered with success.
	initialized bool
	// quota is its share of its principal's workspaces quota, given back
	// when it is removed.
	quota *quota.Hold
}

func newSessionStore() *sessionStore {
	return &sessionStore{sessions: map[string]*sessionState{}, now: time.Now}
}

// newID returns an unguessable session id (256 bits from crypto/rand).
func newID() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return "wink-" + base64.RawURLEncoding.EncodeToString(b[:])
}

// reserve holds sl, if the sessions and the slots held are fewer than
// limit, and reports whether it holds it.
func (st *sessionStore) reserve(sl *slot, limit int) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if sl.held || len(st.sessions)+st.reserved >= limit {
		return sl.held
	}
	st.reserved++
	sl.held = true
	return true
}

// holdQuota takes one of principal's workspaces quota for the session sl
// may open, unless sl holds it already; an *quota.ExceededError past it.
// The ledger is asked outside the store's lock: its refusal hook writes
// the audit log.
func (st *sessionStore) holdQuota(sl *slot, principal string) error {
	st.mu.Lock()
	held := sl.quota != nil
	st.mu.Unlock()
	if held {
		return nil
	}
	hold, err := st.quotas.Reserve(principal, quota.Amounts{quota.Workspaces: 1})
	if err != nil {
		return err
	}
	st.mu.Lock()
	sl.quota = hold
	st.mu.Unlock()
	return nil
}

// open records session id of principal in the slot sl holds.
func (st *sessionStore) open(sl *slot, id, principal string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if sl.held {
		st.reserved--
		sl.held = false
	}
	sl.id = id
	st.sessions[id] = &sessionState{principal: principal, last: st.now(), quota: sl.quota}
	sl.quota = nil
}

// release gives up sl, if it still holds a slot (and the quota of a
// session it did not become), and returns the session it became ("" for
// none).
func (st *sessionStore) release(sl *slot) string {
	st.mu.Lock()
	defer st.mu.Unlock()
	if sl.held {
		st.reserved--
		sl.held = false
	}
	sl.quota.Release()
	sl.quota = nil
	return sl.id
}

// initialized records that session id's initialize succeeded.
func (st *sessionStore) initialized(id string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if s, ok := st.sessions[id]; ok {
		s.initialized = true
	}
}

// uninitialized reports whether id is a live session whose initialize
// did not succeed.
func (st *sessionStore) uninitialized(id string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	s, ok := st.sessions[id]
	return ok && !s.initialized
}

// has reports whether id is a live session.
func (st *sessionStore) has(id string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	_, ok := st.sessions[id]
	return ok
}

// owns reports whether id is a live session of principal.
func (st *sessionStore) owns(id, principal string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	s, ok := st.sessions[id]
	return ok && s.principal == principal
}

// begin records that a request of session id is being served, if it is a
// live session of principal, and returns the function that records its end.
func (st *sessionStore) begin(id, principal string) (end func(), ok bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	s, ok := st.sessions[id]
	if !ok || s.principal != principal {
		return nil, false
	}
	s.inflight++
	s.requests++
	s.last = st.now()
	return func() {
		st.mu.Lock()
		s.inflight--
		s.last = st.now()
		st.mu.Unlock()
	}, true
}

// remove forgets a session and gives back its quota.
func (st *sessionStore) remove(id string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if s, ok := st.sessions[id]; ok {
		s.quota.Release()
		delete(st.sessions, id)
	}
}

// count is the number of live sessions and of the slots held for
// sessions being opened.
func (st *sessionStore) count() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.sessions) + st.reserved
}

// idle lists the sessions with no request in flight and none for idle (or
// for unconfirmedTTL, when no request followed the initialize).
func (st *sessionStore) idle(idle time.Duration) []string {
	st.mu.Lock()
	defer st.mu.Unlock()
	now := st.now()
	var out []string
	for id, s := range st.sessions {
		ttl := idle
		if s.requests == 0 {
			ttl = min(idle, unconfirmedTTL)
		}
		if s.inflight == 0 && now.Sub(s.last) >= ttl {
			out = append(out, id)
		}
	}
	return out
}

// sessionIDs hands streamable HTTP session ids out of a sessionStore: each
// id is recorded, with the principal of the request that asked for it, the
// moment it is generated, so the client's next request already finds it.
type sessionIDs struct {
	store *sessionStore
	// slot is the slot the request's session takes (nil: no request, no session).
	slot *slot
	// reserve holds a slot for a request that came without one: an
	// initialize sent with a session's id still opens a new session.
	reserve   func(*slot) (waiting int, ok bool)
	principal string
	// workspace is the kept workspace the initialize asked for, "" for none.
	workspace string
	// profile is the profile the initialize asked for, "" for the default.
	profile string
	// register tells the workspaces what the new session asks for.
	register func(id string, opts workspace.SessionOptions)
}

var _ mcpserver.SessionIdManager = sessionIDs{}

// Generate issues and records a new id, in the request's slot; past the
// cap it issues none ("": mcp-go then makes no session).
func (m sessionIDs) Generate() string {
	if m.slot == nil || m.reserve == nil {
		return ""
	}
	if _, ok := m.reserve(m.slot); !ok {
		return ""
	}
	if err := m.store.holdQuota(m.slot, m.principal); err != nil {
		return "" // an initialize sent with a session's id, past its principal's quota
	}
	id := newID()
	m.store.open(m.slot, id, m.principal)
	if m.register != nil {
		m.register(id, workspace.SessionOptions{Workspace: m.workspace, Profile: m.profile, Principal: m.principal})
	}
	return id
}

// Validate accepts only live ids. (The guard has already checked the
// principal; the transport's own sweeper validates without one.)
func (m sessionIDs) Validate(id string) (bool, error) {
	m.store.mu.Lock()
	defer m.store.mu.Unlock()
	if _, ok := m.store.sessions[id]; !ok {
		return false, errUnknownSession
	}
	return false, nil
}

// Terminate ends a session; the unregister hook then removes its workspace.
func (m sessionIDs) Terminate(id string) (bool, error) {
	m.store.remove(id)
	return false, nil
}

// parkLimit refuses a handoff that would keep more workspaces in this
// server than --max-sessions: a handed-over workspace keeps its container
// and jobs until it is attached or expires, so it holds a session's slot.
// It is called under the manager's lock, as reserveSlot counts, so the two
// never both take the last slot.
func (s *Server) parkLimit(waiting int) error {
	open, max := s.sessions.count(), s.cfg.HTTP.MaxSessions
	if open+waiting+1 <= max {
		return nil
	}
	return fmt.Errorf("handing the workspace over would keep %d workspaces in this server, past --max-sessions %d: %d sessions are open and %d handed-over workspaces "+
		"wait for workspace_attach, each keeping its container and jobs. Attach one (workspace_attach, from a session whose workspace holds no work yet), "+
		"let one expire, or ask the user to raise --max-sessions", open+waiting+1, max, open, waiting)
}

// reserveSlot holds a --max-sessions slot in sl for a request that may
// open a session, if the open sessions, the slots held and the handed-over
// workspaces waiting for an attach leave one, and says how many wait. It
// counts under the manager's lock, as a handoff does (parkLimit).
func (s *Server) reserveSlot(sl *slot) (waiting int, ok bool) {
	s.mgr.CountParked(func(n int) {
		waiting, ok = n, s.sessions.reserve(sl, s.cfg.HTTP.MaxSessions-n)
	})
	return waiting, ok
}
