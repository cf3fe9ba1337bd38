package main

import (
	"fmt"
	"net"
	"strconv"

	"github.com/wink-mcp/wink-mcp/egress"
	"github.com/wink-mcp/wink-mcp/workspace"
	"github.com/wink-mcp/wink-mcp/workspace/repo"
)

// resolveRepo reads --repo URL[#REF]: the repository every session's
// workspace starts with. Its host must be one --egress lets sessions
// reach, since the clone goes through the session's egress proxy: --repo
// opens nothing by itself.
func resolveRepo(w *workspace.Config, spec string) error {
	if spec == "" {
		return nil
	}
	r, err := repo.Parse(spec)
	if err != nil {
		return fmt.Errorf("--repo: %w", err)
	}
	host, port := r.Host, 443
	if h, p, err := net.SplitHostPort(r.Host); err == nil {
		host = h
		if port, err = strconv.Atoi(p); err != nil {
			return fmt.Errorf("--repo: port %q is not a number", p)
		}
	}
	policy, err := egress.ParsePolicy(w.Egress)
	if err != nil {
		return err // --egress's own check says it better, and runs first
	}
	if _, ok := policy.Match(host, port); !ok {
		return fmt.Errorf("--repo: the clone reaches %s through the egress proxy, which no --egress pattern allows; add --egress %s", r.Host, r.Host)
	}
	w.Repo = &r
	return nil
}
