package server

import (
	"context"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/tools"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// Handoff under a handle: workspace_open's `handoff` argument takes over a
// workspace handed over with workspace_handoff (by a 2025 session or under
// another handle), and workspace_handoff and workspace_attach act on a
// handle's workspace as on a session's. After either of those two tools,
// the handle names another workspace than the kept one its record may
// name, so the record goes (changedByHandoff); a handle that takes over a
// kept workspace from disk (a stdio handoff) is recorded on it.

// Names of the tools that change which workspace a handle names.
const (
	toolWorkspaceHandoff = "workspace_handoff"
	toolWorkspaceAttach  = "workspace_attach"
)

// openHandedOver finishes workspace_open with `handoff`: the handle's
// fresh workspace (session, ws) takes over the one handed over.
func (sh *sharedHandles) openHandedOver(ctx context.Context, handle, session string, ws *workspace.Session, handoff string) (*mcp.CallToolResult, error) {
	principal := principalFrom(ctx)
	fail := func(err error) (*mcp.CallToolResult, error) {
		_, _, _ = sh.handles.close(handle, principal)
		sh.mgr.EndSession(context.WithoutCancel(ctx), session)
		return mcp.NewToolResultError("workspace_open: handoff: " + err.Error()), nil
	}
	h, _ := tools.PartOf[tools.Handoffs](ws) // a session always has its handoffs part
	attached, err := h.Attach(ctx, handoff)
	if err != nil {
		return fail(err)
	}
	came := " with the handed-over workspace's files and checkpoints"
	if attached.KeptContainer {
		came = " with the handed-over workspace's running container and background jobs"
	}
	if attached.Workspace != "" {
		if err := sh.record(ctx, handle, principal, attached.Workspace, "", false); err != nil {
			return fail(err)
		}
	}
	sh.log.Info("workspace handle opened on a handed-over workspace", "session", sh.mgr.SessionHash(session), "kept_container", attached.KeptContainer)
	return openedResult(handle, came), nil
}

// changedByHandoff forgets the record of handle when call, a tool of a
// handle's workspace that succeeded, was workspace_handoff or
// workspace_attach: the handle now names another workspace. After a
// roaming workspace's handoff, that is the fresh roaming one the session
// goes on with (workspace.RoamingNameOf), on which the handle is
// recorded, so any server serves it still; otherwise it is a workspace of
// this process only.
func (sh *sharedHandles) changedByHandoff(ctx context.Context, call, handle, session string, result *mcp.CallToolResult) {
	if call != toolWorkspaceHandoff && call != toolWorkspaceAttach || result == nil || result.IsError {
		return
	}
	ctx = context.WithoutCancel(ctx)
	if rec := sh.handles.recordOf(handle, principalFrom(ctx)); rec != nil {
		sh.forget(ctx, rec)
		sh.handles.setRecord(handle, nil)
	}
	ws, err := sh.mgr.Session(session)
	if name := workspace.RoamingNameOf(ws); err == nil && name != "" {
		if err := sh.record(ctx, handle, principalFrom(ctx), name, "", true); err != nil {
			sh.log.Warn("recording a handle on the fresh roaming workspace after a handoff; it is served by this server only", "err", err)
		}
	}
}

// takenHandoff is a roaming workspace's handoff taken for a handle
// (takeRoamingHandoff): the handle's record that replaced it, and the
// handoff's record, to give back if the handle cannot open it.
type takenHandoff struct {
	handle  engine.HandleRecord
	handoff engine.HandoffRecord
}

// takeRoamingHandoff takes, for handle (just opened), the roaming
// workspace handed over with the handoff handle on any replica
// (engine.RoamingHandoffs): its record now names handle. nil when no
// handoff of principal's that works is recorded there: it may wait in
// this process (openHandedOver says).
func (sh *sharedHandles) takeRoamingHandoff(ctx context.Context, handle, handoff string) (*takenHandoff, error) {
	store, ok := sh.store.(engine.RoamingHandoffs)
	if !ok || !sh.roams {
		return nil, nil
	}
	principal := principalFrom(ctx)
	rec, given, err := store.TakeHandoff(ctx, engine.HandleDigest(handoff), principal,
		engine.HandleRecord{Digest: engine.HandleDigest(handle), Principal: principal, Used: sh.now().UTC()})
	switch {
	case errors.Is(err, engine.ErrNoHandleRecord):
		return nil, nil
	case err != nil:
		return nil, err
	}
	sh.handles.setRecord(handle, &rec)
	sh.log.Info("handed-over workspace taken from its record", "workspace", rec.Workspace)
	return &takenHandoff{handle: rec, handoff: given}, nil
}

// giveBack puts a handoff taken by a handle that could not open its
// workspace back where every replica finds it, so that the handoff
// handle works again (rather than the workspace waiting, unreachable,
// for the idle sweep); nothing when taken is nil.
func (sh *sharedHandles) giveBack(ctx context.Context, taken *takenHandoff) {
	if taken == nil {
		return
	}
	store, _ := sh.store.(engine.RoamingHandoffs) // takeRoamingHandoff checked it
	if err := store.GiveBackHandoff(context.WithoutCancel(ctx), taken.handle, taken.handoff); err != nil {
		sh.log.Warn("giving back a handoff whose taker failed; its workspace goes after the idle timeout", "workspace", taken.handle.Workspace, "err", err)
		return
	}
	sh.log.Info("handoff given back: its taker could not open the workspace", "workspace", taken.handle.Workspace)
}
