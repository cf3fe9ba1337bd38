package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/tools"
)

// startTask calls podman_shell as an MCP task and returns the task's id;
// the call must answer at once, before the command ends.
func startTask(t *testing.T, p *proc, argv ...string) string {
	t.Helper()
	req := shellRequest(argv...)
	req.Params.Task = &mcp.TaskParams{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	before, err := p.client.ListTasks(ctx, mcp.ListTasksRequest{})
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	// mcp-go's client reads every tools/call answer as a tool result, so a
	// task answer reads as one without content; the task list shows it.
	if _, err := p.client.CallTool(ctx, req); err != nil && !strings.Contains(err.Error(), "content is missing") {
		t.Fatalf("a task-augmented call: %v", err)
	}
	if took := time.Since(begin); took > 5*time.Second {
		t.Errorf("the task-augmented call answered after %v; want at once", took)
	}
	after, err := p.client.ListTasks(ctx, mcp.ListTasksRequest{})
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, task := range before.Tasks {
		known[task.TaskId] = true
	}
	for _, task := range after.Tasks {
		if !known[task.TaskId] {
			return task.TaskId
		}
	}
	t.Fatalf("no new task listed: %+v", after.Tasks)
	return ""
}

// TestTaskAugmentedCalls: a client that speaks MCP tasks gets a task at
// once, polls it to its result, and cancels another, whose process tree
// is gone; on every transport.
func TestTaskAugmentedCalls(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			taskScenario(t, tr)
		})
	}
}

func taskScenario(t *testing.T, tr string) {
	p := start(t, startOptions{transport: tr})
	p.run("true")
	ctx := context.Background()
	id := startTask(t, p, "sh", "-c", "sleep 4; echo done by the task")
	var status mcp.TaskStatus
	waitUntil(t, 30*time.Second, "the task to complete", func() bool {
		got, err := p.client.GetTask(ctx, mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: id}})
		if err != nil {
			t.Fatal(err)
		}
		status = got.Status
		return status != mcp.TaskStatusWorking
	})
	res, err := p.client.TaskResult(ctx, mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: id}})
	if err != nil || status != mcp.TaskStatusCompleted || res.IsError {
		t.Fatalf("status %s, result %+v, %v", status, res, err)
	}
	var out tools.ShellResult
	raw, _ := json.Marshal(res.StructuredContent)
	if json.Unmarshal(raw, &out) != nil || out.Stdout != "done by the task\n" || out.ExitCode != 0 {
		t.Errorf("the task's result: %s", raw)
	}

	marker := fmt.Sprintf("5%04d", time.Now().UnixNano()%9973)
	cancelled := startTask(t, p, "sh", "-c", "sleep "+marker+" & setsid sleep "+marker+" & wait")
	waitUntil(t, 10*time.Second, "the task's command to run", func() bool {
		return strings.Contains(p.run("ps", "-o", "args").Stdout, "sleep "+marker)
	})
	if _, err := p.client.CancelTask(ctx, mcp.CancelTaskRequest{Params: mcp.CancelTaskParams{TaskId: cancelled}}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "the cancelled task's processes to go", func() bool {
		return !strings.Contains(p.run("ps", "-o", "args").Stdout, "sleep "+marker)
	})
}
