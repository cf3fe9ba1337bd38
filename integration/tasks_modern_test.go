package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// modernTasksRun is what tsclient/tasks.mjs prints.
type modernTasksRun struct {
	Created struct {
		MS                         int64
		ResultType, Status, TaskID string
		TTLMs, PollIntervalMs      int64
	}
	Completed struct {
		Status, Stdout string
		Polls          int
	}
	RunningBefore, RunningAfter string
	Cancel                      struct{ Result map[string]any }
	Cancelled                   string
	GoneMs                      int64
	Update, Unknown             string
	WithoutExtension            string
	BobGet, BobCancel           string
	BobUnknown                  string
	BobWithAlicesHandle         struct{ ResultType, Text string }
}

// 2026-07-28 tasks (the io.modelcontextprotocol/tasks extension) through
// the TypeScript SDK v2's transports, on stdio and streamable HTTP with
// real Podman: a long podman_shell answered at once with a task and polled
// with tasks/get to its result; a task cancelled, and its sleep gone from
// the workspace; tasks/update refused; a client without the extension gets
// a plain result. Over HTTP, another principal (token) sees alice's task
// exactly as an id never issued, cannot cancel it, and makes no task with
// her handle.
func TestModernTasks(t *testing.T) {
	if _, err := os.Stat(filepath.Join("tsclient", "node_modules", "@modelcontextprotocol", "client")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the TypeScript SDK v2 client is not installed (run make setup): %v", err)
		}
		t.Skip("the TypeScript SDK v2 client is not installed; run make setup")
	}
	for _, tr := range []string{"stdio", "http"} {
		t.Run(tr, func(t *testing.T) {
			var args []string
			if tr == "stdio" {
				args = []string{"stdio", winkBin, "--transport", "stdio", "--image", testImage, "--cache-dir", t.TempDir(),
					"--name-prefix", "wk" + randomHex(4), "--podman-url", "unix://" + podmanSocket, "--warm", "0"}
			} else {
				other := "integration-token-other-0123456789"
				tokenFile := filepath.Join(t.TempDir(), "tokens")
				if err := os.WriteFile(tokenFile, []byte(testToken+"\n"+other+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				p := launch(t, startOptions{transport: "http", args: []string{"--auth-token-file", tokenFile, "--warm", "0"}})
				args = []string{"http", p.url, testToken, other}
			}
			cmd := exec.Command("node", append([]string{filepath.Join("tsclient", "tasks.mjs")}, args...)...)
			cmd.Stderr = os.Stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("tasks.mjs: %v\n%s", err, out)
			}
			var run modernTasksRun
			if err := json.Unmarshal(out, &run); err != nil {
				t.Fatalf("tasks.mjs printed %q: %v", out, err)
			}
			t.Logf("%s", out)
			c := run.Created
			if c.ResultType != "task" || c.Status != "working" || !strings.HasPrefix(c.TaskID, "wtk_") || c.TTLMs <= 0 || c.PollIntervalMs <= 0 {
				t.Errorf("the task call's answer: %+v", c)
			}
			if run.Completed.Status != "completed" || run.Completed.Stdout != "task-done\n" || run.Completed.Polls < 2 {
				t.Errorf("the task polled to its end: %+v; want completed with the command's output, after polls", run.Completed)
			}
			if run.RunningBefore != "1" || run.Cancel.Result == nil || run.Cancelled != "cancelled" || run.RunningAfter != "0" {
				t.Errorf("cancel: the sleep ran %q before, cancel %+v, status %q, %q left after", run.RunningBefore, run.Cancel, run.Cancelled, run.RunningAfter)
			}
			if !strings.Contains(run.Update, "asks for no input") {
				t.Errorf("tasks/update: %q", run.Update)
			}
			if !strings.Contains(run.Unknown, "unknown task") {
				t.Errorf("an id never issued: %q", run.Unknown)
			}
			if run.WithoutExtension != "complete" {
				t.Errorf("a client without the extension got resultType %q", run.WithoutExtension)
			}
			if tr != "http" {
				return
			}
			never := strings.ReplaceAll(run.BobUnknown, "wtk_never-issued", "ID")
			for name, got := range map[string]string{"tasks/get": run.BobGet, "tasks/cancel": run.BobCancel} {
				if strings.ReplaceAll(got, c.TaskID, "ID") != never || never == "" {
					t.Errorf("bob's %s of alice's task: %q; want exactly the unknown id's %q", name, got, run.BobUnknown)
				}
			}
			if run.BobWithAlicesHandle.ResultType == "task" || !strings.Contains(run.BobWithAlicesHandle.Text, "unknown workspace handle") {
				t.Errorf("bob's call with alice's handle: %+v", run.BobWithAlicesHandle)
			}
		})
	}
}
