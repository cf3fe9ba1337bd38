package main

import (
	"strings"
	"testing"
)

// TestWorkspacesOnKubernetes checks the refusals of `wink-mcp workspaces`
// with --engine kubernetes; listing and removing on the real node are
// integration.TestKubernetesKeptWorkspace's.
func TestWorkspacesOnKubernetes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--engine", "docker", "list"}, 2, `--engine "docker": want podman or kubernetes`},
		{[]string{"--engine", "kubernetes", "show", "w1"}, 2, "workspaces show is not available with --engine kubernetes yet: `list`"},
		{[]string{"--engine", "kubernetes", "prune", "--older-than", "1h"}, 2, "kubectl get pvc,lease -l io.wink-mcp.kept=true"},
		{[]string{"--engine", "kubernetes", "rm", "bad/name"}, 1, `workspace name "bad/name"`},
		{[]string{"--kubeconfig", t.TempDir() + "/none", "list"}, 1, "cannot reach the Kubernetes API server"},
	} {
		var out, errs strings.Builder
		lookup := env(map[string]string{"WINK_ENGINE": "kubernetes"})
		if tc.args[0] == "--engine" {
			lookup = env(nil)
		}
		code := runWorkspaces(tc.args, lookup, &out, &errs)
		if code != tc.code || !strings.Contains(errs.String(), tc.want) {
			t.Errorf("workspaces %q: exit %d, %q; want %d and %q", tc.args, code, errs.String(), tc.code, tc.want)
		}
	}
}
