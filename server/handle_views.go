package server

import (
	"context"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// handleMetaKey is the _meta member a 2026-07-28 resources/list names the
// handle whose workspace it lists in: a request body, like a tool's
// workspace argument, never a URL.
const handleMetaKey = "wink-mcp/workspace"

// handleViews serves the workspaces of handles (MCP revision 2026-07-28)
// as resources: it knows each open handle by its reference (refOf), finds
// the workspace a resource URI names for the request's principal, and
// keeps the subscriptions/listen streams that follow them. It is safe for
// concurrent use.
type handleViews struct {
	// beginCall begins a use of a handle of ctx's principal, as a tool
	// call's (sharedHandles.beginHandleCall: held here, or adopted from
	// its record).
	beginCall func(ctx context.Context, handle string) (session string, end func(), err error)
	listens   *listens

	mu        sync.Mutex
	byRef     map[string]viewedHandle
	bySession map[string]string // manager session -> reference
}

// viewedHandle is what a reference stands for.
type viewedHandle struct {
	handle  string
	session string
}

func newHandleViews(beginCall func(ctx context.Context, handle string) (string, func(), error)) *handleViews {
	return &handleViews{beginCall: beginCall, listens: newListens(), byRef: map[string]viewedHandle{}, bySession: map[string]string{}}
}

// opened records a handle held here (opened, or adopted from its record)
// and its manager session, and returns the reference its resource URIs
// carry. Recording one again changes nothing.
func (v *handleViews) opened(handle, session string) string {
	ref := refOf(handle)
	v.mu.Lock()
	defer v.mu.Unlock()
	v.byRef[ref] = viewedHandle{handle: handle, session: session}
	v.bySession[session] = ref
	return ref
}

// ended forgets the handle of a manager session that ended (closed or
// expired) and ends the streams that follow it.
func (v *handleViews) ended(session string) {
	v.mu.Lock()
	ref, ok := v.bySession[session]
	delete(v.bySession, session)
	delete(v.byRef, ref)
	v.mu.Unlock()
	if ok {
		v.listens.end(session)
	}
}

// begin finds the live handle a reference names for the request's
// principal and marks a use of it as running, exactly like a tool call
// with the handle (beginCall): another principal's reference, a closed
// one and one never issued all get errUnknownHandle. A reference is known
// once its handle is held here: a handle opened on another replica or
// before a restart has its resources here after its first tool call here.
func (v *handleViews) begin(ctx context.Context, ref string) (session string, end func(), err error) {
	v.mu.Lock()
	h, ok := v.byRef[ref]
	v.mu.Unlock()
	if !ok {
		return "", nil, errUnknownHandle
	}
	return v.beginCall(ctx, h.handle)
}

// known reports whether ref names a handle that has not ended.
func (v *handleViews) known(ref string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	_, ok := v.byRef[ref]
	return ok
}

// inWorkspace returns ctx bound to the workspace ref names, as a tool call
// with its handle is (handleSessionKey), and the function that ends the use.
func (v *handleViews) inWorkspace(ctx context.Context, ref string) (context.Context, func(), error) {
	session, end, err := v.begin(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	return context.WithValue(ctx, handleSessionKey{}, session), end, nil
}

// handleOfList returns the handle a resources/list request names in its
// _meta, "" if none.
func handleOfList(req *mcp.ListResourcesRequest) string {
	if req == nil || req.Params.Meta == nil {
		return ""
	}
	h, _ := req.Params.Meta.AdditionalFields[handleMetaKey].(string)
	return h
}

// showTemplatesOfEra keeps in a templates list the templates of the
// request's revision: a 2025 session's files, or a handle's.
func showTemplatesOfEra(ctx context.Context, _ any, _ *mcp.ListResourceTemplatesRequest, result *mcp.ListResourceTemplatesResult) {
	if result == nil {
		return
	}
	modern := mcpserver.IsModernRequest(ctx)
	kept := result.ResourceTemplates[:0]
	for _, t := range result.ResourceTemplates {
		if t.URITemplate != nil && isHandleTemplate(t.URITemplate.Raw()) == modern {
			kept = append(kept, t)
		}
	}
	result.ResourceTemplates = kept
}

// isHandleTemplate reports whether a template is one of a handle's.
func isHandleTemplate(raw string) bool {
	return raw == HandleFilesTemplate || raw == HandleSnapshotTemplate || raw == HandleDigestTemplate
}
