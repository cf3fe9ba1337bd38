package main

import (
	"fmt"
	"net"
	"strconv"

	"github.com/wink-mcp/wink-mcp/egress"
	"github.com/wink-mcp/wink-mcp/workspace"
	"github.com/wink-mcp/wink-mcp/workspace/repo"
)

// resolveRepo reads --repo URL[#REF], the repository every session's
// workspace starts with, and checks each profile's repo. Each host must
// be one the sessions may reach (--egress, and a profile's own
// egress.session for its repo), since the clone goes through the
// session's egress proxy: a repo opens nothing by itself.
func resolveRepo(w *workspace.Config, spec string) error {
	for _, p := range w.Profiles.All() {
		if p.Repo == nil {
			continue
		}
		if err := repoReachable(*p.Repo, append(append([]string{}, w.Egress...), p.Egress.Session...)); err != nil {
			return fmt.Errorf("%s:%d: profile %q: repo: %w to the server's --egress or the profile's egress.session", p.File, p.RepoLine, p.Name, err)
		}
	}
	if spec == "" {
		return nil
	}
	r, err := repo.Parse(spec)
	if err != nil {
		return fmt.Errorf("--repo: %w", err)
	}
	if err := repoReachable(r, w.Egress); err != nil {
		return fmt.Errorf("--repo: %w with --egress", err)
	}
	w.Repo = &r
	return nil
}

// repoReachable says whether the egress patterns let a session reach
// r's host; its error ends with the host to add.
func repoReachable(r repo.Repo, patterns []string) error {
	host, port := r.Host, 443
	if h, p, err := net.SplitHostPort(r.Host); err == nil {
		host = h
		if port, err = strconv.Atoi(p); err != nil {
			return fmt.Errorf("port %q is not a number", p)
		}
	}
	policy, err := egress.ParsePolicy(patterns)
	if err != nil {
		return err
	}
	if _, ok := policy.Match(host, port); !ok {
		return fmt.Errorf("the clone reaches %s through the egress proxy, which no egress pattern allows; add %s", r.Host, r.Host)
	}
	return nil
}
