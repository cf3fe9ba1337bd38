package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestConformanceSuite runs the official MCP conformance suite's server
// scenarios against wink-mcp over streamable HTTP. Every scenario must pass
// but those tsclient/conformance-baseline.yaml names, which call fixtures
// of the SDKs' reference test server; the suite itself fails the run when
// one of those passes, so the baseline cannot go stale.
func TestConformanceSuite(t *testing.T) {
	suite := filepath.Join("tsclient", "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	if _, err := os.Stat(suite); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the conformance suite is not installed (run make setup): %v", err)
		}
		t.Skip("the conformance suite is not installed; run make setup")
	}
	p := launch(t, startOptions{transport: "http"})
	args := []string{suite, "server", "--url", p.url, "--expected-failures", filepath.Join("tsclient", "conformance-baseline.yaml")}
	if out, err := exec.Command("node", "--version").Output(); err == nil && strings.HasPrefix(string(out), "v20.") {
		args = append([]string{"--import", "./" + filepath.Join("tsclient", "node20.mjs")}, args...)
	}
	cmd := exec.Command("node", args...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	summary := string(out)
	if i := strings.Index(summary, "=== SUMMARY ==="); i >= 0 {
		summary = summary[i:]
	}
	t.Logf("conformance suite:\n%s", summary)
	if err != nil {
		t.Fatalf("the conformance suite failed: %v\n%s", err, out)
	}
	if !strings.Contains(summary, "logging-set-level: 1 passed") || !strings.Contains(summary, "completion-complete: 1 passed") {
		t.Errorf("the scenarios the issue names did not pass:\n%s", summary)
	}
}
