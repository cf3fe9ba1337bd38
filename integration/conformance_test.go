package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestConformanceSuite runs the official MCP conformance suite's server
// scenarios against wink-mcp over streamable HTTP, twice: those of
// revision 2025-11-25 (the stateful initialize handshake), then exactly
// those revision 2026-07-28 requires (--requirements: stateless requests
// with server/discover, Mcp-Method and Mcp-Param headers). Every scenario
// must pass but those the baselines name (tsclient/conformance-baseline*.yaml,
// each with why: most call fixtures of the SDKs' reference test server);
// the suite itself fails the run when one of those passes, so a baseline
// cannot go stale.
func TestConformanceSuite(t *testing.T) {
	suite := filepath.Join("tsclient", "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	if _, err := os.Stat(suite); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the conformance suite is not installed (run make setup): %v", err)
		}
		t.Skip("the conformance suite is not installed; run make setup")
	}
	p := launch(t, startOptions{transport: "http"})
	run := func(baseline string, revision ...string) string {
		t.Helper()
		args := append([]string{suite, "server", "--url", p.url, "--expected-failures", filepath.Join("tsclient", baseline)}, revision...)
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
		t.Logf("conformance suite %v:\n%s", revision, summary)
		if err != nil {
			t.Fatalf("the conformance suite %v failed: %v\n%s", revision, err, out)
		}
		return summary
	}
	legacy := run("conformance-baseline.yaml", "--spec-version", "2025-11-25")
	for _, want := range []string{"logging-set-level: 2 passed, 0 failed", "completion-complete: 2 passed, 0 failed", "server-session-lifecycle: 3 passed, 0 failed"} {
		if !strings.Contains(legacy, want) {
			t.Errorf("2025-11-25: the summary lacks %q", want)
		}
	}
	modern := run("conformance-baseline-2026-07-28.yaml", "--requirements", "2026-07-28")
	for _, want := range []string{"http-header-validation: 14 passed, 0 failed", "http-custom-header-server-validation: 10 passed, 0 failed",
		"tools-list: 4 passed, 0 failed", "server-stateless: 24 passed, 4 failed", "sep-2164-resource-not-found: 4 passed, 0 failed", "dns-rebinding-protection: 2 passed, 0 failed"} {
		if !strings.Contains(modern, want) {
			t.Errorf("2026-07-28: the summary lacks %q", want)
		}
	}
}
