package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/engine/kubernetes"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// clusterFlags choose where `wink-mcp workspaces` finds kept workspaces:
// under the cache directory (podman), or in a cluster (kubernetes), where
// the Kubernetes engine keeps them.
type clusterFlags struct {
	engine, kubeconfig, namespace string
	// checkpointDir is the server's --checkpoint-dir.
	checkpointDir string
}

// bindClusterFlags declares, on fs, the flags of clusterFlags with the
// server's names, defaults and environment variables.
func bindClusterFlags(fs *flag.FlagSet, lookup func(string) (string, bool)) *clusterFlags {
	c := &clusterFlags{engine: enginePodman, namespace: defaultNamespace}
	for _, f := range []struct {
		to               *string
		name, env, usage string
	}{
		{&c.engine, "engine", "WINK_ENGINE", "where the kept workspaces are: podman (under the cache directory) or kubernetes (in the cluster)"},
		{&c.kubeconfig, "kubeconfig", "WINK_KUBECONFIG", "kubeconfig of the cluster of --engine kubernetes"},
		{&c.namespace, "namespace", "WINK_NAMESPACE", "namespace of the kept workspaces of --engine kubernetes"},
		{&c.checkpointDir, "checkpoint-dir", "WINK_CHECKPOINT_DIR", checkpointDirUsage},
	} {
		if v, ok := lookup(f.env); ok && v != "" {
			*f.to = v
		}
		fs.StringVar(f.to, f.name, *f.to, f.usage+" ["+f.env+"]")
	}
	return c
}

// clusterTimeout bounds a command against the cluster; a removal waits
// for the claim to go.
const clusterTimeout = 2 * time.Minute

// run lists or removes the kept workspaces of the cluster. show and prune
// are refused, saying what to use: a claim's files are on a node, not
// here.
func (c *clusterFlags) run(cmd, cache string, rest []string, stdout, stderr io.Writer) int {
	if c.engine != engineKubernetes {
		fmt.Fprintf(stderr, "wink-mcp workspaces: --engine %q: want podman or kubernetes\n", c.engine)
		return 2
	}
	store := kubernetes.New(kubernetes.Options{Kubeconfig: c.kubeconfig, Namespace: c.namespace, APITimeout: 30 * time.Second},
		slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	fail := func(err error) int {
		fmt.Fprintf(stderr, "wink-mcp workspaces %s: %v\n", cmd, err)
		return 1
	}
	checkpointDir := workspace.CheckpointDirOf(c.checkpointDir, cache)
	switch {
	case cmd == "list" && len(rest) <= 1:
		list, err := store.ListKept(ctx)
		if err != nil {
			return fail(err)
		}
		if len(list) == 0 {
			fmt.Fprintf(stdout, "no kept workspaces in namespace %s\n", c.namespace)
			return 0
		}
		fmt.Fprintf(stdout, "%-24s %-19s %9s %-8s %-16s %s\n", "NAME", "LAST USED", "SIZE", "CLAIM", "CHECKPOINTS", "STATE")
		for _, k := range list {
			fmt.Fprintln(stdout, keptSummary(k, checkpointDir))
		}
		return 0
	case cmd == "rm" && len(rest) == 2:
		if err := workspace.CheckWorkspaceName(rest[1]); err != nil {
			return fail(err)
		}
		list, err := store.ListKept(ctx)
		if err != nil {
			return fail(err)
		}
		if err := store.RemoveKept(ctx, rest[1]); err != nil {
			return fail(err)
		}
		for _, k := range list {
			if k.Name != rest[1] {
				continue
			}
			if err := workspace.RemoveKeptStore(checkpointDir, k.StoreKey, k.Name); err != nil {
				return fail(err)
			}
		}
		fmt.Fprintf(stdout, "removed workspace %s\n", rest[1])
		return 0
	case cmd == "show" || cmd == "prune":
		fmt.Fprintf(stderr, "wink-mcp workspaces %s is not available with --engine kubernetes yet: `list` shows each kept workspace's record and holder, "+
			"`rm NAME` removes one; `kubectl get pvc,lease -l %s=true` shows their objects\n", cmd, kubernetes.KeptLabel)
		return 2
	}
	fmt.Fprintf(stderr, "wink-mcp workspaces %s: unknown command or wrong arguments (see -h)\n", cmd)
	return 2
}

// keptSummary renders a kept workspace of the cluster in one line, with
// its checkpoints under checkpointDir.
func keptSummary(k engine.KeptRecord, checkpointDir string) string {
	state := "free"
	if k.Holder != "" {
		state = "held by " + k.Holder + " until " + k.HeldUntil.Local().Format(time.RFC3339)
	}
	saved := "none"
	if list, bytes, err := workspace.KeptCheckpoints(checkpointDir, k.StoreKey); err != nil {
		saved = "unreadable"
	} else if len(list) > 0 {
		saved = fmt.Sprintf("%d, %s", len(list), checkpoints.FormatBytes(bytes))
	}
	return fmt.Sprintf("%-24s %-19s %9s %-8s %-16s %s", k.Name, k.Used.Local().Format("2006-01-02 15:04"), checkpoints.FormatBytes(k.RequestedBytes),
		k.ProvisionStatus, saved, state)
}
