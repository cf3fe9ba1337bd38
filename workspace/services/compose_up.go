package services

import (
	"cmp"
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/wink-mcp/wink-mcp/wire"
)

// ComposeUp starts the services of the compose file at file (relative to
// Deps.Root, the workspace's folder), or of the first of ComposeNames there
// when file is "", dependencies first (Compose says what it reads). A
// service of that name that runs already is kept; one that fails is
// reported with those it held back, and the ones started stay running.
func (r *Room) ComposeUp(ctx context.Context, file string) ([]Info, error) {
	data, used, err := r.readCompose(ctx, r.d.Root, file)
	if err != nil {
		return nil, err
	}
	profileOf := r.d.ProfileOf
	if profileOf == nil {
		profileOf = func(string) (string, error) { return "", fmt.Errorf("no profiles here") }
	}
	decls, err := Compose(used, data, profileOf)
	if err != nil {
		return nil, fmt.Errorf("compose_file: %w", err)
	}
	var infos []Info
	failed := map[string]bool{}
	var problems []string
	for _, d := range decls {
		var held []string
		for _, dep := range d.DependsOn {
			if failed[dep] {
				held = append(held, dep)
			}
		}
		if len(held) > 0 {
			failed[d.Name] = true
			problems = append(problems, fmt.Sprintf("%s: not started: it depends on %s", d.Name, strings.Join(held, ", ")))
			continue
		}
		if svc, err := r.get(d.Name); err == nil {
			infos = append(infos, svc.info()) // up again: it runs
			continue
		}
		info, err := r.startSpec(ctx, d.Spec)
		if err != nil {
			failed[d.Name] = true
			problems = append(problems, fmt.Sprintf("%s: %v", d.Name, err))
			continue
		}
		infos = append(infos, info)
	}
	if len(problems) > 0 {
		var started []string
		for _, in := range infos {
			started = append(started, in.Name)
		}
		return infos, fmt.Errorf("%s: %d of %d services did not start (running: %s):\n%s", used, len(problems), len(decls),
			cmp.Or(strings.Join(started, ", "), "none"), strings.Join(problems, "\n"))
	}
	return infos, nil
}

// readCompose reads the compose file through the workspace's agent.
func (r *Room) readCompose(ctx context.Context, root, file string) ([]byte, string, error) {
	candidates := ComposeNames
	if file != "" {
		candidates = []string{file}
	}
	var tried []string
	for _, name := range candidates {
		p := name
		if !path.IsAbs(p) {
			p = path.Join(root, p)
		}
		rel, under := strings.CutPrefix(path.Clean(p), root+"/")
		if !under {
			return nil, p, fmt.Errorf("compose_file: %s is not under %s", p, root)
		}
		var res wire.ReadResult
		err := r.d.Call(ctx, wire.OpRead, wire.ReadArgs{Path: rel, Whole: true}, &res) // the agent's file paths are the workspace's
		if err == nil && len(res.Content) > MaxComposeBytes {
			return nil, p, fmt.Errorf("compose_file: %s has %d bytes; at most %d", p, len(res.Content), MaxComposeBytes)
		}
		if err == nil {
			return []byte(res.Content), p, nil
		}
		if file != "" {
			return nil, p, fmt.Errorf("compose_file: reading %s: %w", p, err)
		}
		tried = append(tried, name)
	}
	return nil, "", fmt.Errorf("compose_file: no %s in %s; give compose_file (such as project/compose.yaml in a mounted folder)", strings.Join(tried, ", "), root)
}
