package workspace

import (
	"context"
	"fmt"
	"strings"

	"github.com/wink-mcp/wink-mcp/profiles"
	"github.com/wink-mcp/wink-mcp/wire"
	"github.com/wink-mcp/wink-mcp/workspace/repo"
)

// sessionRepo is the repository a session under profile p starts with:
// the profile's, else the server's (nil for none).
func sessionRepo(p *profiles.Profile, server *repo.Repo) *repo.Repo {
	if p != nil && p.Repo != nil {
		return p.Repo
	}
	return server
}

// cloneTimeout bounds each step of a repository's clone.
const cloneTimeout = 10 * 60 * 1000 // ms

// cloneRepo clones the repository sessions start with (Config.Repo) into
// the workspace, as the first step of a container whose workspace does
// not hold its folder yet: a container made again on the same files (a
// profile switch with restart, a kept workspace's next session) finds
// the folder and clones nothing. The clone runs as the session's user,
// through the session's egress proxy (which adds a credential for the
// host), with git's prompts off so a private repository without one
// fails at once; its steps are argument vectors, never a shell line.
func cloneRepo(ctx context.Context, client *wire.Client, r *repo.Repo) error {
	if r == nil {
		return nil
	}
	var res ExecResult
	if err := client.Call(ctx, wire.OpExec, wire.ExecArgs{Argv: []string{"test", "-e", r.Dir}, TimeoutMillis: 10_000, OutputLimit: 1024}, &res); err != nil {
		return fmt.Errorf("looking for %s/%s: %w", Root, r.Dir, err)
	}
	if res.ExitCode == 0 {
		return nil
	}
	// Every host goes through the proxy, localhost too: the container has
	// no other way out, and a URL's localhost is the server's machine, as
	// in --egress localhost:PORT.
	env := map[string]string{"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "NO_PROXY": "", "no_proxy": ""}
	for i, argv := range r.Steps() {
		res = ExecResult{}
		err := client.Call(ctx, wire.OpExec, wire.ExecArgs{Argv: argv, Env: env, TimeoutMillis: cloneTimeout, Capture: true, OutputLimit: 4096}, &res)
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("%s exited with status %d: %s", []string{"git clone", "git checkout"}[min(i, 1)], res.ExitCode, strings.TrimSpace(res.Stderr))
		}
		if err != nil {
			return fmt.Errorf("cloning --repo %s into %s/%s (the host must be in --egress; a private repository's token in --credentials): %w", r, Root, r.Dir, err)
		}
	}
	return nil
}
