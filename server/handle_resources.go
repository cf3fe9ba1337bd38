package server

import (
	"context"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// registerHandleResources adds the resource templates of a handle's
// workspace (MCP revision 2026-07-28): its files and its snapshot, named
// by the handle's reference (see handle_uris.go).
func registerHandleResources(s *Server) {
	s.mcp.AddResourceTemplate(
		mcp.NewResourceTemplate(HandleFilesTemplate, "Workspace file",
			mcp.WithTemplateDescription("A text file in the /workspace of a workspace handle, by path; workspace is the reference workspace_open returned (wsr_...), "+
				"and only the client that opened the handle can read it."),
			mcp.WithTemplateMIMEType("text/plain")),
		func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return readHandleResource(ctx, s, req)
		})
	s.mcp.AddResourceTemplate(
		mcp.NewResourceTemplate(HandleSnapshotTemplate, "Workspace snapshot",
			mcp.WithTemplateDescription("The files the tools and commands of a workspace handle wrote, edited or removed, as JSON (see the 2025 snapshot resource); "+
				"workspace is the reference workspace_open returned (wsr_...)."),
			mcp.WithTemplateMIMEType("application/json")),
		func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return readHandleResource(ctx, s, req)
		})
	s.mcp.AddResourceTemplate(
		mcp.NewResourceTemplate(HandleDigestTemplate, "Workspace digest",
			mcp.WithTemplateDescription("The workspace digest of a workspace handle, Markdown (see the 2025 digest resource and workspace_digest); "+
				"workspace is the reference workspace_open returned (wsr_...)."),
			mcp.WithTemplateMIMEType("text/markdown")),
		func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return readHandleResource(ctx, s, req)
		})
}

// readHandleResource reads a resource of a handle's workspace for a
// 2026-07-28 request; a 2025 session's request for one is refused, as its
// own workspace has other URIs. The templates overlap (the handle
// template matches wink://workspace/files/snapshot with workspace
// "files"), so a 2025 URI that reaches it is read as the session's.
func readHandleResource(ctx context.Context, s *Server, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	if !mcpserver.IsModernRequest(ctx) {
		if !isHandleURI(req.Params.URI) {
			// A 2025 file whose path makes it look like a handle's
			// (wink://workspace/files/snapshot): the session's own.
			return readSessionFile(ctx, s, req.Params.URI)
		}
		return nil, errors.New("uri: a workspace handle's resource (wsr_...) is for clients of MCP revision 2026-07-28; this session's files are " + FilesURITemplate)
	}
	r, err := parseHandleURI(req.Params.URI)
	if err != nil {
		return nil, err
	}
	ctx, end, err := s.views.inWorkspace(ctx, r.ref)
	if err != nil {
		return nil, err
	}
	defer end()
	if r.digest {
		ws, err := s.sessionWorkspace(ctx)
		if err != nil {
			return nil, err
		}
		return digestContents(ctx, ws, req.Params.URI)
	}
	if !r.file {
		ws, err := s.sessionWorkspace(ctx)
		if err != nil {
			return nil, err
		}
		return snapshotContents(ws, req.Params.URI, func(path string) string { return handleResource{ref: r.ref, file: true, path: path}.uri() })
	}
	return fileContents(ctx, s, r.path, req.Params.URI)
}

// listHandleResources answers a 2026-07-28 resources/list: the snapshot, the digest
// and the touched files of the handle its _meta names, nothing without
// one; a 2025 session's list is left as it is.
func listHandleResources(s *Server) mcpserver.OnAfterListResourcesFunc {
	return func(ctx context.Context, _ any, req *mcp.ListResourcesRequest, result *mcp.ListResourcesResult) {
		if result == nil || !mcpserver.IsModernRequest(ctx) {
			return
		}
		result.Resources = []mcp.Resource{}
		handle := handleOfList(req)
		if handle == "" {
			return
		}
		ref := refOf(handle)
		ctx, end, err := s.views.inWorkspace(ctx, ref)
		if err != nil {
			return
		}
		defer end()
		ws, err := s.sessionWorkspace(ctx)
		if err != nil {
			return
		}
		touched, err := partOf[touchedFiles](ws)
		if err != nil {
			return
		}
		snapshot := handleResource{ref: ref}
		result.Resources = append(result.Resources, mcp.NewResource(snapshot.uri(), "Workspace snapshot",
			mcp.WithResourceDescription("The files this workspace's tools and commands wrote, edited or removed."), mcp.WithMIMEType("application/json")))
		digest := handleResource{ref: ref, digest: true}
		result.Resources = append(result.Resources, mcp.NewResource(digest.uri(), "Workspace digest",
			mcp.WithResourceDescription("The workspace's digest: its layout, commands and caveats (workspace_digest)."), mcp.WithMIMEType("text/markdown")))
		for _, f := range touched.Snapshot() {
			if f.Deleted || f.Folded > 0 {
				continue
			}
			file := handleResource{ref: ref, file: true, path: f.Path}
			result.Resources = append(result.Resources, mcp.NewResource(file.uri(), f.Path, mcp.WithMIMEType("text/plain")))
		}
	}
}
