package server

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/workspace"
)

// Resource URIs.
const (
	// SnapshotURI is the session's snapshot of touched files, as JSON.
	SnapshotURI = "wink://workspace/snapshot"
	// filesURIPrefix starts the URI of a workspace file.
	filesURIPrefix = "wink://workspace/files/"
	// FilesURITemplate names any workspace file; {+path} keeps the path's
	// slashes (RFC 6570 reserved expansion).
	FilesURITemplate = filesURIPrefix + "{+path}"
)

// fileURI is the resource URI of a workspace file.
func fileURI(path string) string { return filesURIPrefix + path }

// snapshotEntry is one touched file in the snapshot resource.
type snapshotEntry struct {
	workspace.TouchedFile
	URI string `json:"uri"`
}

// registerResources adds the snapshot resource and the file template; both
// answer for the session that reads them.
func (s *Server) registerResources() {
	s.mcp.AddResource(
		mcp.NewResource(SnapshotURI, "Workspace snapshot",
			mcp.WithResourceDescription("The files this session's tools wrote, edited or removed: path, uri, size, version (writes counted), created and updated times, deleted."),
			mcp.WithMIMEType("application/json")),
		func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			ws, err := s.sessionWorkspace(ctx)
			if err != nil {
				return nil, err
			}
			files := ws.Snapshot()
			entries := make([]snapshotEntry, len(files))
			for i, f := range files {
				entries[i] = snapshotEntry{TouchedFile: f, URI: fileURI(f.Path)}
			}
			b, err := json.MarshalIndent(map[string]any{"files": entries}, "", "  ")
			if err != nil {
				return nil, err
			}
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: SnapshotURI, MIMEType: "application/json", Text: string(b)}}, nil
		})
	s.mcp.AddResourceTemplate(
		mcp.NewResourceTemplate(FilesURITemplate, "Workspace file",
			mcp.WithTemplateDescription("A text file in this session's /workspace, by path (the snapshot lists the touched ones with their URIs)."),
			mcp.WithTemplateMIMEType("text/plain")),
		func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			raw, _ := url.PathUnescape(strings.TrimPrefix(req.Params.URI, filesURIPrefix))
			path, err := workspace.CleanPath(raw)
			if err != nil {
				return nil, err
			}
			ws, err := s.sessionWorkspace(ctx)
			if err != nil {
				return nil, err
			}
			text, err := ws.ReadWhole(ctx, path)
			if err != nil {
				return nil, err
			}
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: text}}, nil
		})
}

// subscriptions records which resource URIs each session subscribed to. It
// is safe for concurrent use.
type subscriptions struct {
	mu        sync.Mutex
	bySession map[string]map[string]bool
}

func newSubscriptions() *subscriptions {
	return &subscriptions{bySession: map[string]map[string]bool{}}
}

func (s *subscriptions) add(session, uri string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bySession[session] == nil {
		s.bySession[session] = map[string]bool{}
	}
	s.bySession[session][uri] = true
}

func (s *subscriptions) remove(session, uri string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.bySession[session], uri)
}

func (s *subscriptions) drop(session string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.bySession, session)
}

// affected returns the session's subscribed URIs that changed paths touch:
// the snapshot, each path's file, and the files under a removed directory.
func (s *subscriptions) affected(session string, paths []string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for uri := range s.bySession[session] {
		if uri == SnapshotURI {
			out = append(out, uri)
			continue
		}
		for _, p := range paths {
			if uri == fileURI(p) || strings.HasPrefix(uri, fileURI(p)+"/") {
				out = append(out, uri)
				break
			}
		}
	}
	return out
}

// trackSubscriptions keeps the subscription store in step with the clients'
// subscribe and unsubscribe requests.
func (s *Server) trackSubscriptions(hooks *mcpserver.Hooks) {
	hooks.AddAfterSubscribe(func(ctx context.Context, _ any, req *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		if session := mcpserver.ClientSessionFromContext(ctx); session != nil {
			s.subs.add(session.SessionID(), req.Params.URI)
			s.log.Debug("resource subscribed", "session", s.mgr.SessionHash(session.SessionID()), "uri", req.Params.URI)
		}
	})
	hooks.AddAfterUnsubscribe(func(ctx context.Context, _ any, req *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
		if session := mcpserver.ClientSessionFromContext(ctx); session != nil {
			s.subs.remove(session.SessionID(), req.Params.URI)
		}
	})
}

// notifyChanged sends notifications/resources/updated for each subscribed
// resource that changed paths touch. They go out through the tool call that
// made the change (ctx), so they travel on that call's stream, which over
// streamable HTTP is the one a client is sure to read. Best effort: a client
// that does not keep up misses notifications rather than slowing the call.
func (s *Server) notifyChanged(ctx context.Context, sessionID string, paths []string) {
	for _, uri := range s.subs.affected(sessionID, paths) {
		if err := s.mcp.SendNotificationToClient(ctx, "notifications/resources/updated", map[string]any{"uri": uri}); err != nil {
			s.log.Debug("resource update not sent", "session", s.mgr.SessionHash(sessionID), "uri", uri, "err", err)
		}
	}
}
