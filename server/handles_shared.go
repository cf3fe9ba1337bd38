package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"golang.org/x/sync/singleflight"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/quota"
	"github.com/wink-mcp/wink-mcp/server/mcpgoadapt"
	"github.com/wink-mcp/wink-mcp/workspace"
	"github.com/wink-mcp/wink-mcp/workspace/keep"
)

// A handle on a kept workspace has a record that outlives the process
// that opened it (engine.HandleRecord: the handle's SHA-256, its
// principal, the kept workspace, its profile and last use), kept where
// the kept workspace is: on the cache disk beside it (keep.HandleFiles),
// or in the cluster on its claim (the Kubernetes engine), where every
// replica reads it. A server that gets a call with a handle it does not
// hold looks the record up and, for the same principal, opens the kept
// workspace and serves the call; a server restarted does the same.
// A handle on a workspace that is not kept has a record only when its
// engine lets every server drive every container (roams: Kubernetes):
// its workspace is then a roaming one (workspace.SessionOptions.Roaming),
// whose record is on its Lease, and it moves between servers as a kept
// one does. Otherwise (Podman) it ends with its process, as its container
// does.
//
// A closed or expired handle is refused everywhere: workspace_close
// removes the record wherever it is served; a server holding a handle
// checks its record is still there (and sets its last use) at most every
// recordCheckEvery, and ends the handle when it is gone; a record found
// unused for the idle timeout is removed, not served.
const recordCheckEvery = time.Second

// sharedHandles finds, adopts, refreshes and forgets handle records.
type sharedHandles struct {
	store   engine.HandleStore
	handles *handleStore
	mgr     *workspace.Manager
	quotas  *quota.Ledger
	idle    time.Duration
	// maxHandles bounds the handles held, adopted ones included (--max-sessions).
	maxHandles int
	// roams says a handle's own workspace (not kept) is a roaming one,
	// with a record, that any server may serve.
	roams bool
	log   *slog.Logger
	now   func() time.Time

	// adopting joins the calls that adopt one handle of one principal at
	// once: a crowd of calls on a handle this server does not hold adopts
	// it once, and an adoption waiting for another server (up to 30 s on
	// Kubernetes) holds up no other handle's.
	adopting singleflight.Group
}

// newSharedHandles returns the records of s's handles: the engine's
// store if it keeps kept workspaces where every replica sees them, the
// cache disk's otherwise.
func newSharedHandles(cfg Config, handles *handleStore, mgr *workspace.Manager, log *slog.Logger) *sharedHandles {
	store, ok := cfg.Workspace.Engine.(engine.HandleStore)
	if !ok || !cfg.Workspace.FilesOnEngineHost {
		store = &keep.HandleFiles{CacheDir: cfg.Workspace.CacheDir}
	}
	_, adopts := cfg.Workspace.Engine.(engine.ContainerAdopter)
	sh := &sharedHandles{store: store, handles: handles, mgr: mgr, quotas: cfg.Quotas, idle: cfg.Workspace.IdleTimeout,
		maxHandles: cfg.HTTP.MaxSessions, roams: ok && adopts && cfg.Workspace.FilesOnEngineHost, log: log, now: time.Now}
	handles.letGo = sh.letGo
	return sh
}

// keptOptions are the session options of handle's kept workspace name:
// any server may serve it in turn, so another that asks for it is given it.
func (sh *sharedHandles) keptOptions(handle, name, profile, principal string, stdio bool) workspace.SessionOptions {
	return workspace.SessionOptions{Workspace: name, Profile: profile, Principal: principal, Stdio: stdio,
		OnWanted: func() { sh.handles.want(handle) }}
}

// ownOptions are the session options of handle's own workspace (not
// kept): a roaming one when roaming is not "" (its name; see roams),
// which another server that asks for it is given.
func (sh *sharedHandles) ownOptions(handle, roaming, profile, principal string, stdio bool) workspace.SessionOptions {
	opts := workspace.SessionOptions{Profile: profile, Principal: principal, Stdio: stdio}
	if roaming != "" {
		opts.Roaming, opts.OnWanted = roaming, func() { sh.handles.want(handle) }
	}
	return opts
}

// optionsOf are the session options that serve rec's handle.
func (sh *sharedHandles) optionsOf(handle string, rec engine.HandleRecord, stdio bool) workspace.SessionOptions {
	if rec.Roaming {
		return sh.ownOptions(handle, rec.Workspace, rec.Profile, rec.Principal, stdio)
	}
	return sh.keptOptions(handle, rec.Workspace, rec.Profile, rec.Principal, stdio)
}

// letGo ends the session of a handle another server asked for; the
// handle's record stays, for that server (and the release of the kept
// workspace's lease is what it waits for).
func (sh *sharedHandles) letGo(session string) {
	sh.log.Info("workspace handle let go: another server asked for its kept workspace", "session", sh.mgr.SessionHash(session))
	sh.mgr.EndSession(context.Background(), session)
}

// record records handle of principal, just opened on the kept workspace
// name (roaming: the roaming workspace name) with profile.
func (sh *sharedHandles) record(ctx context.Context, handle, principal, name, profile string, roaming bool) error {
	rec := engine.HandleRecord{Digest: engine.HandleDigest(handle), Principal: principal, Workspace: name, Profile: profile, Used: sh.now().UTC(), Roaming: roaming}
	if err := sh.store.PutHandle(ctx, rec); err != nil {
		return err
	}
	sh.handles.setRecord(handle, &rec)
	return nil
}

// errHeldElsewhere says a handle's kept workspace is served by another
// server right now; only its own principal gets it.
var errHeldElsewhere = errors.New("this handle's workspace is being served by another wink-mcp server (a replica) right now")

// adopt makes this process hold handle of principal from its record:
// errUnknownHandle when there is none of principal's, or it has expired.
func (sh *sharedHandles) adopt(ctx context.Context, handle, principal string, stdio bool) error {
	// Keyed by the digest and principal, so that another principal's
	// call on the same handle never shares this one's outcome.
	_, err, _ := sh.adopting.Do(engine.HandleDigest(handle)+" "+principal, func() (any, error) {
		if sh.handles.recordOf(handle, principal) != nil {
			return nil, nil // adopted by a call just before this one
		}
		return nil, sh.adoptNow(context.WithoutCancel(ctx), handle, principal, stdio)
	})
	return err
}

// adoptNow is adopt, for the one call of a crowd that does it.
func (sh *sharedHandles) adoptNow(ctx context.Context, handle, principal string, stdio bool) error {
	rec, err := sh.store.FindHandle(ctx, engine.HandleDigest(handle))
	if errors.Is(err, engine.ErrNoHandleRecord) || err == nil && rec.Principal != principal {
		return errUnknownHandle
	}
	if err != nil {
		sh.log.Warn("looking up a workspace handle's record", "err", err)
		return fmt.Errorf("the workspace handle could not be looked up (%v); try again", err)
	}
	if rec.Expired(sh.now(), sh.idle) {
		sh.forget(ctx, &rec)
		return errUnknownHandle
	}
	if sh.maxHandles > 0 && sh.handles.count() >= sh.maxHandles {
		return fmt.Errorf("this server keeps at most %d workspace handles open at once (--max-sessions); close one with workspace_close, or try again later", sh.maxHandles)
	}
	hold, err := sh.quotas.Reserve(principal, quota.Amounts{quota.Workspaces: 1})
	if err != nil {
		return err
	}
	session := newHandleSession()
	sh.mgr.Register(session, sh.optionsOf(handle, rec, stdio))
	if _, err := sh.mgr.Session(session); err != nil {
		hold.Release()
		sh.mgr.EndSession(ctx, session)
		if errors.Is(err, engine.ErrKeptHeld) || errors.Is(err, keep.ErrWorkspaceInUse) {
			return fmt.Errorf("%w: route its calls by the Mcp-Param-Workspace header (docs/kubernetes.md), or retry once that server is gone (%v)", errHeldElsewhere, err)
		}
		return fmt.Errorf("opening the handle's workspace %q: %w", rec.Workspace, err)
	}
	rec.Used = sh.now().UTC()
	if err := sh.store.TouchHandle(ctx, rec); err != nil { // closed meanwhile, elsewhere
		hold.Release()
		sh.mgr.EndSession(ctx, session)
		return errUnknownHandle
	}
	sh.handles.adopt(handle, &handleState{principal: principal, session: session, quota: hold, record: &rec})
	sh.log.Info("workspace handle adopted from its record", "session", sh.mgr.SessionHash(session), "workspace", rec.Workspace, "roaming", rec.Roaming)
	return nil
}

// refresh checks, at most every recordCheckEvery, that the record of a
// held handle is still there (not closed elsewhere) and sets its last
// use; a handle without a record needs nothing. errUnknownHandle, having
// ended the handle here, when the record is gone.
func (sh *sharedHandles) refresh(ctx context.Context, handle, principal string) error {
	rec := sh.handles.recordDue(handle, principal, recordCheckEvery)
	if rec == nil {
		return nil
	}
	rec.Used = sh.now().UTC()
	err := sh.store.TouchHandle(ctx, *rec)
	switch {
	case errors.Is(err, engine.ErrNoHandleRecord):
		if session, _, err := sh.handles.close(handle, principal); err == nil {
			sh.log.Info("workspace handle closed elsewhere", "session", sh.mgr.SessionHash(session))
			sh.mgr.EndSession(context.WithoutCancel(ctx), session)
		}
		return errUnknownHandle
	case err != nil:
		sh.log.Warn("refreshing a workspace handle's record; the call goes on", "err", err)
	}
	return nil
}

// closeRecorded closes handle of principal that this process does not
// hold, by removing its record: errUnknownHandle when it has none.
func (sh *sharedHandles) closeRecorded(ctx context.Context, handle, principal string) error {
	rec, err := sh.store.FindHandle(ctx, engine.HandleDigest(handle))
	if err != nil || rec.Principal != principal {
		return errUnknownHandle
	}
	sh.forget(ctx, &rec)
	return nil
}

// forget removes rec, a handle's record (nil: none), logging a failure.
func (sh *sharedHandles) forget(ctx context.Context, rec *engine.HandleRecord) {
	if rec == nil {
		return
	}
	if err := sh.store.DeleteHandle(ctx, rec.Workspace, rec.Digest); err != nil {
		sh.log.Warn("removing a workspace handle's record; it expires after the idle timeout", "err", err)
	}
}

// beginHandleCall begins a call on handle of ctx's principal: held here
// (its record still there), or adopted from its record.
func (sh *sharedHandles) beginHandleCall(ctx context.Context, handle string) (session string, end func(), err error) {
	principal := principalFrom(ctx)
	if err := sh.refresh(ctx, handle, principal); err != nil {
		return "", nil, err
	}
	session, end, err = sh.handles.begin(handle, principal)
	if !errors.Is(err, errUnknownHandle) {
		return session, end, err
	}
	stdio := mcpgoadapt.IsStdio(mcpserver.ClientSessionFromContext(ctx))
	if err := sh.adopt(ctx, handle, principal, stdio); err != nil {
		return "", nil, err
	}
	return sh.handles.begin(handle, principal)
}
