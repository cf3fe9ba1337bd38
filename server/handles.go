package server

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/quota"
	"github.com/wink-mcp/wink-mcp/server/mcpgoadapt"
)

// handlePrefix begins every workspace handle, so that one pasted where it
// does not belong (a URL's query string) is recognised and refused.
const handlePrefix = "wsh_"

// handleBytes is the randomness of a handle: 256 bits from crypto/rand.
const handleBytes = 32

// errUnknownHandle is the answer for a handle that was never issued, was
// closed, expired, or belongs to another principal: all look alike, so
// nothing can be learnt by probing.
var errUnknownHandle = errors.New("unknown workspace handle: it was never opened, was closed (workspace_close), " +
	"expired after the server's --idle-timeout without calls, or belongs to another client; open one with workspace_open")

// handleStore records the workspace handles this server issued to clients
// of the 2026-07-28 revision: each names a managed workspace session, is
// bound to the principal that opened it, and is alive until closed or idle
// past the idle timeout (never while one of its calls runs). It is safe for
// concurrent use.
type handleStore struct {
	mu      sync.Mutex
	handles map[string]*handleState
	now     func() time.Time
	// letGo ends the session of a handle whose workspace another server
	// wanted, once it has no call running (sharedHandles.letGo); its
	// record stays, for that server.
	letGo func(session string)
}

// handleState is one handle's owner, session and activity.
type handleState struct {
	principal string
	session   string // the workspace.Manager session id, never shown to clients
	inflight  int
	last      time.Time
	quota     *quota.Hold // its share of the principal's workspaces quota, given back when it ends
	// record is the handle's shared record (handles_shared.go), nil for
	// a handle on a workspace that is not kept, which only this process knows.
	record *engine.HandleRecord
	// checked is when the record was last found still there (refresh).
	checked time.Time
	// wanted says another server asked for the handle's kept workspace:
	// it is let go when its last call ends.
	wanted bool
}

func newHandleStore() *handleStore {
	return &handleStore{handles: map[string]*handleState{}, now: time.Now}
}

// open issues a new handle of principal, holding hold of its quota until
// it ends, with the manager session id it maps to.
func (st *handleStore) open(principal string, hold *quota.Hold) (handle, session string) {
	secret := make([]byte, handleBytes)
	_, _ = rand.Read(secret) // crypto/rand.Read never fails (Go 1.24+)
	handle = handlePrefix + base64.RawURLEncoding.EncodeToString(secret)
	session = newHandleSession()
	st.mu.Lock()
	defer st.mu.Unlock()
	st.handles[handle] = &handleState{principal: principal, session: session, last: st.now(), quota: hold}
	return handle, session
}

// newHandleSession returns a new manager session id for a handle.
func newHandleSession() string {
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	return "handle-" + hex.EncodeToString(id)
}

// adopt holds h as handle's state, a handle this process did not open
// (found by its record; sharedHandles.adopt makes one adoption of a
// handle at a time).
func (st *handleStore) adopt(handle string, h *handleState) {
	st.mu.Lock()
	defer st.mu.Unlock()
	h.last, h.checked = st.now(), st.now()
	st.handles[handle] = h
}

// setRecord gives handle its shared record.
func (st *handleStore) setRecord(handle string, rec *engine.HandleRecord) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if h, ok := st.handles[handle]; ok {
		h.record, h.checked = rec, st.now()
	}
}

// recordDue returns the shared record of handle of principal when its last
// check is every or longer ago, and marks it checked; nil otherwise, and
// for a handle without a record.
func (st *handleStore) recordDue(handle, principal string, every time.Duration) *engine.HandleRecord {
	st.mu.Lock()
	defer st.mu.Unlock()
	h, ok := st.handles[handle]
	if !ok || h.principal != principal || h.record == nil || st.now().Sub(h.checked) < every {
		return nil
	}
	h.checked = st.now()
	rec := *h.record
	return &rec
}

// recordOf returns the shared record of handle of principal, nil if it has none.
func (st *handleStore) recordOf(handle, principal string) *engine.HandleRecord {
	st.mu.Lock()
	defer st.mu.Unlock()
	if h, ok := st.handles[handle]; ok && h.principal == principal && h.record != nil {
		rec := *h.record
		return &rec
	}
	return nil
}

// count returns how many handles are open.
func (st *handleStore) count() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.handles)
}

// begin marks a call on handle of principal as running and returns its
// session and the function that marks the call over; errUnknownHandle for
// a handle that is not a live one of principal.
func (st *handleStore) begin(handle, principal string) (session string, end func(), err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	h, ok := st.handles[handle]
	if !ok || h.principal != principal {
		return "", nil, errUnknownHandle
	}
	h.inflight++
	return h.session, func() {
		st.mu.Lock()
		defer st.mu.Unlock()
		h.inflight--
		h.last = st.now()
		st.letGoIfWantedLocked(handle, h)
	}, nil
}

// want marks handle as wanted by another server: it is let go now, or
// when its last running call ends.
func (st *handleStore) want(handle string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if h, ok := st.handles[handle]; ok {
		h.wanted = true
		st.letGoIfWantedLocked(handle, h)
	}
}

// letGoIfWantedLocked forgets h, handle's state, if it is wanted and idle,
// giving back its quota and ending its session; st.mu is held.
func (st *handleStore) letGoIfWantedLocked(handle string, h *handleState) {
	if !h.wanted || h.inflight > 0 || st.handles[handle] != h {
		return
	}
	delete(st.handles, handle)
	h.quota.Release()
	go st.letGo(h.session) // not under st.mu: it ends a workspace
}

// close forgets handle of principal, gives back its quota, and returns
// its session and shared record (nil if none).
func (st *handleStore) close(handle, principal string) (string, *engine.HandleRecord, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	h, ok := st.handles[handle]
	if !ok || h.principal != principal {
		return "", nil, errUnknownHandle
	}
	delete(st.handles, handle)
	h.quota.Release()
	return h.session, h.record, nil
}

// expiredHandle is a handle the idle expiry ended.
type expiredHandle struct {
	session string
	record  *engine.HandleRecord // nil if it had none
}

// expire forgets the handles with no call running and none for idle,
// gives back their quota, and returns them.
func (st *handleStore) expire(idle time.Duration) []expiredHandle {
	st.mu.Lock()
	defer st.mu.Unlock()
	var ended []expiredHandle
	for handle, h := range st.handles {
		if h.inflight == 0 && st.now().Sub(h.last) >= idle {
			delete(st.handles, handle)
			h.quota.Release()
			ended = append(ended, expiredHandle{session: h.session, record: h.record})
		}
	}
	return ended
}

// inQuery reports whether a URL query string carries a workspace handle,
// percent-encoded or not: a capability must not travel where proxies and
// logs record it.
func inQuery(rawQuery string) bool {
	if strings.Contains(rawQuery, handlePrefix) {
		return true
	}
	decoded, err := url.QueryUnescape(rawQuery)
	return err == nil && strings.Contains(decoded, handlePrefix)
}

// expireHandles ends the workspaces of handles idle past idle until ctx
// is done.
func (s *Server) expireHandles(ctx context.Context, idle time.Duration) {
	onIdleTicks(ctx, idle, func() {
		for _, ended := range s.handles.expire(idle) {
			s.log.Info("workspace handle expired", "session", s.mgr.SessionHash(ended.session), "idle_timeout", idle.String())
			end, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
			s.shared.forget(end, ended.record)
			s.mgr.EndSession(end, ended.session)
			cancel()
		}
	})
}

// refuseSessionScoped refuses the 2026-07-28 requests for what is scoped by
// a session, which such a request has not: mcp-go's tasks (it scopes a
// task to the session that made it, and a request without one would see
// every session's; the extension's are served by modernTasks) and resource
// subscriptions (a session's workspace files).
func refuseSessionScoped(head *mcpgoadapt.Head) error {
	if !mcp.IsModernProtocol(head.ProtocolVersion(mcp.MetaKeyProtocolVersion)) {
		return nil
	}
	method := head.MethodName()
	switch {
	case strings.HasPrefix(method, "tasks/"), method == string(mcp.MethodToolsCall) && head.AsksForTask():
		return errors.New("under 2026-07-28 tasks are the io.modelcontextprotocol/tasks extension: declare it in the request's client capabilities and call podman_shell or evaluate_python without `task`, then poll with tasks/get (tasks/list, tasks/result and a tools/call `task` are of the 2025 revisions)")
	case method == string(mcp.MethodResourcesSubscribe), method == string(mcp.MethodResourcesUnsubscribe):
		return errors.New("resource subscriptions belong to a session's workspace: under 2026-07-28, follow a handle's changes with workspace_changes")
	}
	return nil
}
