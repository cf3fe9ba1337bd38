package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// Bounds of the subscriptions/listen streams that follow handles'
// workspaces (each stream holds at most MaxSubscriptions resources).
const (
	// MaxListensPerHandle caps the streams following one handle.
	MaxListensPerHandle = 4
	// MaxListensPerPrincipal caps the streams of one principal, over all
	// its handles.
	MaxListensPerPrincipal = 32
)

// listener is one subscriptions/listen stream following resources of one
// handle's workspace, or none (a stream of list changes alone).
type listener struct {
	principal string
	session   string // the handle's manager session; "" for a stream that follows no resource
	resources []handleResource
	uris      []string // as the client wrote them, which its notifications carry
	client    mcpserver.ClientSession
	id        json.RawMessage    // the listen request's id, exactly as sent, which tags its notifications
	stop      context.CancelFunc // ends the stream (see withStopper)
	dropped   atomic.Int64       // notifications a full stream did not take
}

// listens holds the open streams. It is safe for concurrent use.
type listens struct {
	mu        sync.Mutex
	bySession map[string]map[*listener]struct{}
	perOwner  map[string]int // streams by principal
}

func newListens() *listens {
	return &listens{bySession: map[string]map[*listener]struct{}{}, perOwner: map[string]int{}}
}

// add registers l unless its handle or principal is at its bound; the
// refusal names the bound and what to do.
func (ls *listens) add(l *listener) error {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if n := len(ls.bySession[l.session]); l.session != "" && n >= MaxListensPerHandle {
		return fmt.Errorf("subscriptions/listen: this workspace already has %d streams following it, the most one may have; "+
			"follow all its resources in one stream, or close one (notifications/cancelled) first", n)
	}
	if n := ls.perOwner[l.principal]; n >= MaxListensPerPrincipal {
		return fmt.Errorf("subscriptions/listen: this client already has %d streams open, the most one may have; close some first", n)
	}
	if ls.bySession[l.session] == nil {
		ls.bySession[l.session] = map[*listener]struct{}{}
	}
	ls.bySession[l.session][l] = struct{}{}
	ls.perOwner[l.principal]++
	return nil
}

// remove forgets l; removing it twice changes nothing.
func (ls *listens) remove(l *listener) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if _, ok := ls.bySession[l.session][l]; !ok {
		return
	}
	delete(ls.bySession[l.session], l)
	if len(ls.bySession[l.session]) == 0 {
		delete(ls.bySession, l.session)
	}
	if ls.perOwner[l.principal]--; ls.perOwner[l.principal] <= 0 {
		delete(ls.perOwner, l.principal)
	}
}

// of returns the streams following a manager session.
func (ls *listens) of(session string) []*listener {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	out := make([]*listener, 0, len(ls.bySession[session]))
	for l := range ls.bySession[session] {
		out = append(out, l)
	}
	return out
}

// end ends every stream following a session whose handle ended.
func (ls *listens) end(session string) {
	for _, l := range ls.of(session) {
		ls.remove(l)
		l.stop()
	}
}

// changed sends notifications/resources/updated on each stream following
// session for each of its resources that changed paths touch. A send
// never waits: a stream whose client does not keep up loses the
// notification (counted, and logged once per stream) rather than slowing
// the call that made the change or any other client.
func (ls *listens) changed(session string, paths []string, log *slog.Logger) {
	for _, l := range ls.of(session) {
		for i, r := range l.resources {
			if !r.affects(paths) {
				continue
			}
			n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
				Method: string(mcp.MethodNotificationResourceUpdated),
				Params: mcp.NotificationParams{
					Meta:             map[string]any{mcp.MetaKeySubscriptionID: l.id},
					AdditionalFields: map[string]any{"uri": l.uris[i]},
				},
			}}
			select {
			case l.client.NotificationChannel() <- n:
			default:
				if l.dropped.Add(1) == 1 {
					log.Warn("a subscriptions/listen stream is full; its client misses resource updates", "session", session)
				}
			}
		}
	}
}

// stopperKey carries the function that ends a request early (withStopper).
type stopperKey struct{}

// withStopper gives a request a context its stream can be ended by: a
// subscriptions/listen whose handle ends stops waiting and returns.
func withStopper(ctx context.Context) context.Context {
	ctx, stop := context.WithCancel(ctx)
	return context.WithValue(ctx, stopperKey{}, stop)
}

// listenParams is what a subscriptions/listen request names.
type listenParams struct {
	ID     json.RawMessage `json:"id"`
	Params struct {
		Notifications mcp.SubscriptionFilter `json:"notifications"`
	} `json:"params"`
}

// startListen checks the resources a 2026-07-28 subscriptions/listen
// request follows before mcp-go acknowledges it: every URI must name a
// resource of one handle of the request's principal, at most
// MaxSubscriptions of them, within the streams' bounds. The stream is
// registered until its request ends. An error is the request's answer.
func (v *handleViews) startListen(ctx context.Context, raw json.RawMessage) error {
	var req listenParams
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil // mcp-go answers what it cannot read
	}
	uris := req.Params.Notifications.ResourceSubscriptions
	if len(uris) == 0 {
		return v.startListChangesListen(ctx)
	}
	if len(uris) > MaxSubscriptions {
		return fmt.Errorf("notifications.resourceSubscriptions: %d URIs, over the %d one stream may follow; follow the snapshot (%s), which hears about every change",
			len(uris), MaxSubscriptions, HandleSnapshotTemplate)
	}
	l := &listener{principal: principalFrom(ctx), client: mcpserver.ClientSessionFromContext(ctx), uris: uris}
	var ref string
	for _, uri := range uris {
		r, err := parseHandleURI(uri)
		if err != nil {
			return err
		}
		if ref == "" {
			ref = r.ref
		} else if r.ref != ref {
			return fmt.Errorf("uri: %q names another workspace than the stream's first URI; a stream follows one workspace: open one per handle", truncateURI(uri))
		}
		l.resources = append(l.resources, r)
	}
	stop, _ := ctx.Value(stopperKey{}).(context.CancelFunc)
	if l.client == nil || stop == nil || req.ID == nil {
		return fmt.Errorf("subscriptions/listen: this transport cannot hold a stream that follows resources; use stdio or streamable HTTP")
	}
	// Opening a stream is a use of the handle; the stream open is not.
	session, end, err := v.begin(ctx, ref)
	if err != nil {
		return err
	}
	end()
	l.id, l.session, l.stop = req.ID, session, stop
	if err := v.listens.add(l); err != nil {
		return err
	}
	context.AfterFunc(ctx, func() { v.listens.remove(l) })
	// A handle that ended while the stream was being checked ends it now.
	if !v.known(ref) {
		v.listens.remove(l)
		return errUnknownHandle
	}
	return nil
}

// startListChangesListen counts a subscriptions/listen stream that follows
// no resource (only list changes, which mcp-go holds open until the client
// ends it) against its principal's MaxListensPerPrincipal, so that a
// client cannot hold streams without bound.
func (v *handleViews) startListChangesListen(ctx context.Context) error {
	l := &listener{principal: principalFrom(ctx)}
	if err := v.listens.add(l); err != nil {
		return err
	}
	context.AfterFunc(ctx, func() { v.listens.remove(l) })
	return nil
}
