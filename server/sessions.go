package server

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"sync"

	mcpserver "github.com/mark3labs/mcp-go/server"
)

// errUnknownSession is what a session check fails with for an id that was
// never issued, has ended, or belongs to another principal: all look alike,
// so nothing can be learnt by probing.
var errUnknownSession = errors.New("unknown session")

// sessionStore records the HTTP sessions this server issued and the
// principal (a digest of the bearer token, or "" without one) each belongs
// to. It is safe for concurrent use.
type sessionStore struct {
	mu       sync.Mutex
	sessions map[string]string // id -> principal
}

func newSessionStore() *sessionStore {
	return &sessionStore{sessions: map[string]string{}}
}

// newID returns an unguessable session id (256 bits from crypto/rand).
func newID() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return "wink-" + base64.RawURLEncoding.EncodeToString(b[:])
}

// add records a session.
func (st *sessionStore) add(id, principal string) {
	st.mu.Lock()
	st.sessions[id] = principal
	st.mu.Unlock()
}

// owns reports whether id is a live session of principal.
func (st *sessionStore) owns(id, principal string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	owner, ok := st.sessions[id]
	return ok && owner == principal
}

// remove forgets a session.
func (st *sessionStore) remove(id string) {
	st.mu.Lock()
	delete(st.sessions, id)
	st.mu.Unlock()
}

// count is the number of live sessions.
func (st *sessionStore) count() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.sessions)
}

// sessionIDs hands streamable HTTP session ids out of a sessionStore: each
// id is recorded, with the principal of the request that asked for it, the
// moment it is generated, so the client's next request already finds it.
type sessionIDs struct {
	store     *sessionStore
	principal string
}

var _ mcpserver.SessionIdManager = sessionIDs{}

// Generate issues and records a new id.
func (m sessionIDs) Generate() string {
	id := newID()
	m.store.add(id, m.principal)
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
