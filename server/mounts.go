package server

import (
	"context"
	"fmt"
	"net/url"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/prompts"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// promptInfo is the workspace prompt's settings for the request's session:
// its own mounts once its container has been made (client roots included),
// the configured ones before.
func (s *Server) promptInfo(ctx context.Context, base prompts.Info) prompts.Info {
	if session := mcpserver.ClientSessionFromContext(ctx); session != nil && session.SessionID() != "" {
		if ws, err := s.mgr.Session(session.SessionID()); err == nil {
			info := ws.Info()
			if len(info.Mounts) > 0 {
				base.Mounts, base.ClientRoots = promptMounts(info.Mounts), false
			}
			if info.Image != "" {
				base.Image = info.Image
			}
			base.Unenforced, base.Kept, base.Profile = info.Unenforced, info.Kept, info.Profile
		}
	}
	return base
}

func promptMounts(ms []workspace.MountInfo) []prompts.Mount {
	out := make([]prompts.Mount, 0, len(ms))
	for _, m := range ms {
		out = append(out, prompts.Mount{HostPath: m.HostPath, WorkspacePath: m.Path, Mode: string(m.Mode)})
	}
	return out
}

// clientRoots asks the client of the request in ctx for its roots and
// returns the host folders among them; roots that are not file:// URIs
// are left out.
func (s *Server) clientRoots(ctx context.Context) ([]string, error) {
	res, err := s.mcp.RequestRoots(ctx, mcp.ListRootsRequest{})
	if err != nil {
		return nil, fmt.Errorf("asking the client for its roots: %w", err)
	}
	var paths []string
	for _, r := range res.Roots {
		u, err := url.Parse(r.URI)
		if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") || u.Path == "" {
			s.log.Warn("a client root is not a local file:// URI; it is not mounted", "root", r.URI)
			continue
		}
		paths = append(paths, u.Path)
	}
	return paths, nil
}
