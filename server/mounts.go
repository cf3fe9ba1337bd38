package server

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/digest"
	"github.com/wink-mcp/wink-mcp/prompts"
	"github.com/wink-mcp/wink-mcp/tools"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// promptInfo is the workspace prompt's settings for the request's session:
// its own mounts once its container has been made (client roots included),
// the configured ones before, its workspace digest, and its image
// (plannedInfo).
func (s *Server) promptInfo(ctx context.Context, base prompts.Info) prompts.Info {
	if session := mcpserver.ClientSessionFromContext(ctx); session != nil && session.SessionID() != "" {
		if ws, err := s.mgr.Session(session.SessionID()); err == nil {
			info := ws.Info()
			if len(info.Mounts) > 0 {
				base.Mounts, base.ClientRoots = promptMounts(info.Mounts), false
			}
			base.Unenforced, base.Kept = info.Unenforced, info.Kept
			if d, ok := tools.PartOf[tools.Digests](ws); ok {
				if dg, err := d.Digest(ctx); err == nil {
					base.Digest, base.DigestGenerated = dg.Text, dg.Source == digest.Generated
				}
			}
		}
	}
	return s.plannedInfo(ctx, base)
}

// promptLookups is how long the prompt's image look-ups may take: a
// prompt is asked for by a user, who may wait a moment; an initialize
// never waits (knownInfo).
const promptLookups = 2 * time.Second

// plannedInfo names in base the image and the profile of the request's
// session: the image its container runs, or the one it will start from,
// never a list of candidates; its look-ups take at most promptLookups. It
// makes no session.
func (s *Server) plannedInfo(ctx context.Context, base prompts.Info) prompts.Info {
	ctx, cancel := context.WithTimeout(ctx, promptLookups)
	defer cancel()
	planned := s.mgr.Images().SessionImage(ctx, requestSession(ctx))
	base.Image, base.ImagePending, base.Profile = planned.Image, planned.Pending, planned.Profile
	if p, err := s.cfg.Workspace.Profiles.Get(planned.Profile); planned.Profile != "" && err == nil {
		base.CommandTimeoutSeconds = int(p.Limits.CommandTimeout / time.Second)
	}
	return base
}

// knownInfo is plannedInfo without asking the engine, for the answers on
// the way to every first call: what this process knows of the session's
// image, else what the configuration says.
func (s *Server) knownInfo(ctx context.Context, base prompts.Info) prompts.Info {
	planned := s.mgr.Images().KnownSessionImage(requestSession(ctx))
	base.Image, base.ImagePending, base.Profile = planned.Image, planned.Pending, planned.Profile
	return base
}

// requestSession is the ID of the request's MCP session, "" for none.
func requestSession(ctx context.Context) string {
	if session := mcpserver.ClientSessionFromContext(ctx); session != nil {
		return session.SessionID()
	}
	return ""
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

// instructSessions makes the instructions of each initialize (and
// server/discover) name the image and the profile of the session that
// asks, as its prompt does, from what is known without the engine, so
// that neither waits for the Podman service.
func (s *Server) instructSessions(hooks *mcpserver.Hooks, base prompts.Info) {
	hooks.AddAfterInitialize(func(ctx context.Context, _ any, _ *mcp.InitializeRequest, result *mcp.InitializeResult) {
		result.Instructions = prompts.Text(s.knownInfo(ctx, base))
	})
	hooks.AddAfterDiscover(func(ctx context.Context, _ any, _ *mcp.DiscoverRequest, result *mcp.DiscoverResult) {
		result.Instructions = prompts.Text(s.knownInfo(ctx, base)) + handleInstructions
	})
}
