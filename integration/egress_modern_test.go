package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// egressAskRun is what tsclient/egressask.mjs prints.
type egressAskRun struct {
	Protocol, Yes, YesAgain, No string
	Questions                   []string
	Manual                      struct {
		ResultType string
		State      bool
		Question   string
	}
	Forged, OtherCall, OtherPrincipal, Answered, Replayed string
}

// With --egress-ask, a 2026-07-28 client (the TypeScript SDK v2, pinned)
// working through a handle is asked about an unlisted host by the call's
// InputRequiredResult: the SDK puts it to its user and retries; a yes
// lets the download through (and is not asked again), a no refuses the
// host. By hand: the result comes back at once (nothing waits for the
// user), and a retry with a forged state, with the state but other
// arguments, or with another principal's state is refused; the state is
// good once.
func TestEgressAskByInputRequired(t *testing.T) {
	r := machineRegistries(t)
	if _, err := os.Stat(filepath.Join("tsclient", "node_modules", "@modelcontextprotocol", "client")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the TypeScript SDK v2 client is not installed (run make setup): %v", err)
		}
		t.Skip("the TypeScript SDK v2 client is not installed; run make setup")
	}
	yesURL := r.npm.JoinPath("left-pad").String()
	for _, tr := range []string{"stdio", "http"} {
		t.Run(tr, func(t *testing.T) {
			var args []string
			if tr == "stdio" {
				args = []string{"stdio", winkBin, "--transport", "stdio", "--image", pythonImage, "--cache-dir", t.TempDir(),
					"--name-prefix", "wq" + randomHex(4), "--podman-url", "unix://" + podmanSocket, "--warm", "0", "--egress-ask"}
			} else {
				other := "integration-token-other-0123456789"
				tokenFile := filepath.Join(t.TempDir(), "tokens")
				if err := os.WriteFile(tokenFile, []byte(testToken+"\n"+other+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				p := launch(t, startOptions{transport: "http", image: pythonImage, args: []string{"--auth-token-file", tokenFile, "--warm", "0", "--egress-ask"}})
				args = []string{"http", p.url, testToken, other}
			}
			cmd := exec.Command("node", append([]string{filepath.Join("tsclient", "egressask.mjs"), yesURL, r.goprox.Hostname()}, args...)...)
			cmd.Stderr = os.Stderr
			start := time.Now()
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("egressask.mjs: %v\n%s", err, out)
			}
			t.Logf("the client's run took %s", time.Since(start).Round(time.Millisecond))
			var run egressAskRun
			if err := json.Unmarshal(out, &run); err != nil {
				t.Fatalf("egressask.mjs printed %q: %v", out, err)
			}
			if run.Protocol != "2026-07-28" {
				t.Fatalf("negotiated %q", run.Protocol)
			}
			if strings.TrimSpace(run.Yes) != "200" || strings.TrimSpace(run.YesAgain) != "200" {
				t.Errorf("after the user's yes: %q, then %q; want 200 twice", run.Yes, run.YesAgain)
			}
			if !strings.Contains(run.No, "403") || !strings.Contains(run.No, "the user declined it") {
				t.Errorf("after the user's no: %q", run.No)
			}
			if len(run.Questions) != 2 || !strings.Contains(run.Questions[0], r.npm.Hostname()+" on port 443") || !strings.Contains(run.Questions[1], r.goprox.Hostname()) {
				t.Errorf("questions %q; want one for each host", run.Questions)
			}
			if run.Manual.ResultType != "input_required" || !run.Manual.State || !strings.Contains(run.Manual.Question, "unlisted.example on port 443") {
				t.Errorf("the call's own result: %+v", run.Manual)
			}
			if !strings.Contains(run.Forged, "requestState of this call is unknown") {
				t.Errorf("a forged state: %q", run.Forged)
			}
			if !strings.Contains(run.OtherCall, "belongs to another call") {
				t.Errorf("the state with other arguments: %q", run.OtherCall)
			}
			if tr == "http" && !strings.Contains(run.OtherPrincipal, "requestState of this call is unknown") {
				t.Errorf("another principal's state: %q", run.OtherPrincipal)
			}
			if !strings.Contains(run.Answered, "does not resolve") || strings.Contains(run.Answered, "403") {
				t.Errorf("the state's own retry with a yes: %q; want the host let through (and found not to resolve)", run.Answered)
			}
			if !strings.Contains(run.Replayed, "already used") {
				t.Errorf("the state used twice: %q", run.Replayed)
			}
		})
	}
}
