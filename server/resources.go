package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/tools"
	"github.com/wink-mcp/wink-mcp/workspace"
	"github.com/wink-mcp/wink-mcp/wspath"
)

// Resource URIs.
const (
	// SnapshotURI is the session's snapshot of touched files, as JSON.
	SnapshotURI = "wink://workspace/snapshot"
	// DigestURI is the session's workspace digest, Markdown.
	DigestURI = "wink://workspace/digest"
	// filesURIPrefix starts the URI of a workspace file.
	filesURIPrefix = tools.FilesURIPrefix
	// FilesURITemplate names any workspace file; {+path} keeps the path's
	// slashes (RFC 6570 reserved expansion).
	FilesURITemplate = filesURIPrefix + "{+path}"
)

// fileURI is the resource URI of a workspace file.
func fileURI(path string) string { return filesURIPrefix + path }

// touchedFiles is what the snapshot resource takes of a session's
// workspace to list the files its tools and commands touched.
type touchedFiles interface {
	// Snapshot lists the files the session's tools and commands wrote,
	// edited or removed.
	Snapshot() []workspace.TouchedFile
}

// wholeReader is what a file resource takes of a session's workspace.
type wholeReader interface {
	// ReadWhole returns a UTF-8 file's whole content, exactly.
	ReadWhole(ctx context.Context, path string) (string, error)
}

// watchReporter is what the snapshot resource takes of a session's
// workspace to say how completely it is watched.
type watchReporter interface {
	// Watching says how completely the workspace is watched for the
	// changes commands make.
	Watching() workspace.WatchReport
}

// requestPart returns the part of the request's session's workspace that
// implements W (see partOf).
func requestPart[W any](ctx context.Context, s *Server) (W, error) {
	ws, err := s.sessionWorkspace(ctx)
	if err != nil {
		var zero W
		return zero, err
	}
	return partOf[W](ws)
}

// partOf returns the part of ws that implements W, as a tool takes its
// interface (tools.PartOf).
func partOf[W any](ws *workspace.Session) (W, error) {
	w, ok := tools.PartOf[W](ws)
	if !ok {
		return w, fmt.Errorf("the session's workspace has no part that implements %s", reflect.TypeFor[W]())
	}
	return w, nil
}

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
			mcp.WithResourceDescription("The files this session's tools and commands wrote, edited or removed: path, uri, size, version (writes counted), created and updated times, deleted, changed_by (tool or command), folded (changes under a directory too many to list); and watch: how completely the workspace is watched for the changes commands make."),
			mcp.WithMIMEType("application/json")),
		func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			ws, err := s.sessionWorkspace(ctx)
			if err != nil {
				return nil, err
			}
			return snapshotContents(ws, SnapshotURI, fileURI)
		})
	s.mcp.AddResource(
		mcp.NewResource(DigestURI, "Workspace digest",
			mcp.WithResourceDescription("A short, task-agnostic summary of the repository in /workspace (layout, the commands that build, test, lint and format it, caveats): "+
				"this session's latest, else the one saved for the repository with workspace_digest, else a placeholder the server generated from the mounted folder's files."),
			mcp.WithMIMEType("text/markdown")),
		func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			ws, err := s.sessionWorkspace(ctx)
			if err != nil {
				return nil, err
			}
			return digestContents(ctx, ws, DigestURI)
		})
	s.mcp.AddResourceTemplate(
		mcp.NewResourceTemplate(FilesURITemplate, "Workspace file",
			mcp.WithTemplateDescription("A text file in this session's /workspace, by path (the snapshot lists the touched ones with their URIs)."),
			mcp.WithTemplateMIMEType("text/plain")),
		func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			if isHandleURI(req.Params.URI) {
				// A handle's file whose reference is "files": the handle's reader answers.
				return readHandleResource(ctx, s, req)
			}
			return readSessionFile(ctx, s, req.Params.URI)
		})
	registerHandleResources(s)
}

// snapshotContents is the snapshot resource of ws at uri, its files
// named by uriOf.
func snapshotContents(ws *workspace.Session, uri string, uriOf func(path string) string) ([]mcp.ResourceContents, error) {
	touched, err := partOf[touchedFiles](ws)
	if err != nil {
		return nil, err
	}
	watch, err := partOf[watchReporter](ws)
	if err != nil {
		return nil, err
	}
	files := touched.Snapshot()
	entries := make([]snapshotEntry, len(files))
	for i, f := range files {
		entries[i] = snapshotEntry{TouchedFile: f, URI: uriOf(f.Path)}
	}
	b, err := json.MarshalIndent(map[string]any{"files": entries, "watch": watch.Watching()}, "", "  ")
	if err != nil {
		return nil, err
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: "application/json", Text: string(b)}}, nil
}

// digestContents is the digest resource of ws at uri.
func digestContents(ctx context.Context, ws *workspace.Session, uri string) ([]mcp.ResourceContents, error) {
	d, err := partOf[tools.Digests](ws)
	if err != nil {
		return nil, err
	}
	dg, err := d.Digest(ctx)
	if err != nil {
		return nil, err
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: "text/markdown", Text: dg.Text}}, nil
}

// readSessionFile reads a file of a 2025 session's workspace by its URI.
func readSessionFile(ctx context.Context, s *Server, uri string) ([]mcp.ResourceContents, error) {
	raw, _ := url.PathUnescape(strings.TrimPrefix(uri, filesURIPrefix))
	path, err := wspath.Clean(raw)
	if err != nil {
		return nil, err
	}
	return fileContents(ctx, s, path, uri)
}

// fileContents is the file resource at uri: the whole text of path in the
// workspace of ctx's request.
func fileContents(ctx context.Context, s *Server, path, uri string) ([]mcp.ResourceContents, error) {
	files, err := requestPart[wholeReader](ctx, s)
	if err != nil {
		return nil, err
	}
	text, err := files.ReadWhole(ctx, path)
	if err != nil {
		return nil, err
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: "text/plain", Text: text}}, nil
}

// MaxSubscriptions caps the resources one session may subscribe to.
const MaxSubscriptions = 512

// subscriptions records which resource URIs each session subscribed to,
// keyed by their canonical form (see canonicalURI) and holding the form the
// client used, which its notifications carry. It is safe for concurrent use.
type subscriptions struct {
	mu        sync.Mutex
	bySession map[string]map[string]string
}

func newSubscriptions() *subscriptions {
	return &subscriptions{bySession: map[string]map[string]string{}}
}

// canonicalURI checks that uri is one of this server's resources (the
// snapshot, or a workspace file with a valid path) and returns its
// canonical form, so "%2F" and "/" name one subscription.
func canonicalURI(uri string) (string, error) {
	if uri == SnapshotURI {
		return uri, nil
	}
	rest, ok := strings.CutPrefix(uri, filesURIPrefix)
	if !ok {
		return "", fmt.Errorf("uri: %q is not a resource of this server; subscribe to %s or to %s", truncateURI(uri), SnapshotURI, FilesURITemplate)
	}
	raw, err := url.PathUnescape(rest)
	if err != nil {
		return "", fmt.Errorf("uri: %q has a bad %%-escape: %w", truncateURI(uri), err)
	}
	path, err := wspath.Clean(raw)
	if err != nil {
		return "", fmt.Errorf("uri: the path of %q: %w", truncateURI(uri), err)
	}
	if path == "" {
		return "", fmt.Errorf("uri: %q names no file; subscribe to a file under /workspace, or to %s for every change", truncateURI(uri), SnapshotURI)
	}
	return fileURI(path), nil
}

// truncateURI keeps a URI short enough to quote in an error.
func truncateURI(uri string) string {
	if len(uri) > 120 {
		return uri[:120] + "..."
	}
	return uri
}

// subscribe records a subscription after checking the URI and the
// session's cap; a refused one changes nothing.
func (s *subscriptions) subscribe(session, uri string) error {
	key, err := canonicalURI(uri)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	subs := s.bySession[session]
	if subs == nil {
		subs = map[string]string{}
		s.bySession[session] = subs
	}
	if _, dup := subs[key]; !dup && len(subs) >= MaxSubscriptions {
		return fmt.Errorf("uri: this session already has %d subscriptions, the most one may have; unsubscribe from some, or subscribe to %s, which hears about every change", MaxSubscriptions, SnapshotURI)
	}
	subs[key] = uri
	return nil
}

func (s *subscriptions) remove(session, uri string) {
	key, err := canonicalURI(uri)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.bySession[session], key)
}

func (s *subscriptions) drop(session string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.bySession, session)
}

// affected returns the session's subscribed URIs, as it subscribed to
// them, that changed paths touch: the snapshot, each path's file, and the
// files under a directory ("" is the whole workspace).
func (s *subscriptions) affected(session string, paths []string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for key, uri := range s.bySession[session] {
		if key == SnapshotURI {
			out = append(out, uri)
			continue
		}
		for _, p := range paths {
			if p == "" || key == fileURI(p) || strings.HasPrefix(key, fileURI(p)+"/") {
				out = append(out, uri)
				break
			}
		}
	}
	return out
}

// subscribe checks and records a resources/subscribe request of the
// session in ctx before mcp-go acknowledges it (see checkRequest), so a
// refused one gets an error, not a silent success.
func (s *Server) subscribe(ctx context.Context, uri string) error {
	session := mcpserver.ClientSessionFromContext(ctx)
	if session == nil {
		return nil
	}
	if err := s.subs.subscribe(session.SessionID(), uri); err != nil {
		s.log.Info("resource subscription refused", "session", s.mgr.SessionHash(session.SessionID()), "err", err)
		return err
	}
	s.log.Debug("resource subscribed", "session", s.mgr.SessionHash(session.SessionID()), "uri", truncateURI(uri))
	return nil
}

// trackUnsubscriptions keeps the subscription store in step with the
// clients' unsubscribe requests.
func (s *Server) trackUnsubscriptions(hooks *mcpserver.Hooks) {
	hooks.AddAfterUnsubscribe(func(ctx context.Context, _ any, req *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
		if session := mcpserver.ClientSessionFromContext(ctx); session != nil {
			s.subs.remove(session.SessionID(), req.Params.URI)
		}
	})
}

// notifyChanged sends notifications/resources/updated for each subscribed
// resource that changed paths touch. They go out through the tool call that
// made the change (ctx), so they travel on that call's stream, which over
// streamable HTTP is the one a client is sure to read; a change no call
// made (a job's) goes to the session's client, on its open stream. Best effort: a client
// that does not keep up misses notifications rather than slowing the call.
func (s *Server) notifyChanged(ctx context.Context, sessionID string, paths []string) {
	s.views.listens.changed(sessionID, paths, s.log)
	uris := s.subs.affected(sessionID, paths)
	if len(uris) > 0 && mcpserver.ClientSessionFromContext(ctx) == nil {
		// A change reported apart from any call: to the session's client.
		session := s.clients.get(sessionID)
		if session == nil {
			return
		}
		ctx = s.mcp.WithContext(ctx, session)
	}
	for _, uri := range uris {
		if err := s.mcp.SendNotificationToClient(ctx, "notifications/resources/updated", map[string]any{"uri": uri}); err != nil {
			s.log.Debug("resource update not sent", "session", s.mgr.SessionHash(sessionID), "uri", uri, "err", err)
		}
	}
}
