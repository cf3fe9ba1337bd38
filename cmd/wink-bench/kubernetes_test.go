package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestKubernetesNeedsCluster: without the test node's kubeconfig the
// bench stops before measuring anything, naming the flag and what to run.
func TestKubernetesNeedsCluster(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "admin.kubeconfig")
	_, err := connectKubernetes(context.Background(), config{kubeconfig: missing, namespace: "wink-bench"})
	if err == nil {
		t.Fatal("a missing kubeconfig was accepted")
	}
	for _, want := range []string{"-kubeconfig " + missing, "make cluster"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not say %q", err, want)
		}
	}
}
