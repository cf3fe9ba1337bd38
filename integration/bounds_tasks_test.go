package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// taskTTLOf returns the ttl the server gave a task (0 for none).
func taskTTLOf(t *testing.T, p *proc, id string) int64 {
	t.Helper()
	got, err := p.client.GetTask(context.Background(), mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: id}})
	if err != nil {
		t.Fatal(err)
	}
	if got.TTL == nil {
		return 0
	}
	return *got.TTL
}

// waitTask waits for a task to end.
func waitTask(t *testing.T, p *proc, id string) {
	t.Helper()
	waitUntil(t, 60*time.Second, "the task to end", func() bool {
		got, err := p.client.GetTask(context.Background(), mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: id}})
		return err == nil && got.Status != mcp.TaskStatusWorking
	})
}

// taskResultText is what tasks/result gives for a task, as JSON.
func taskResultText(t *testing.T, p *proc, id string) string {
	t.Helper()
	res, err := p.client.TaskResult(context.Background(), mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: id}})
	if err != nil {
		return "error: " + err.Error()
	}
	raw, _ := json.Marshal(res)
	return string(raw)
}

// taskResultsAreBounded: a client that asks for no ttl, or for ten days,
// gets a bounded one; a session keeps the results of its latest 64 tasks
// whole; and what its tasks held goes when the session ends (DELETE), as
// the server's own heap shows.
func taskResultsAreBounded(t *testing.T) {
	const n = 120
	p := start(t, startOptions{transport: "http", args: []string{"--warm", "0"}})
	p.run("true")
	broken := 0
	const wantDefault, wantCap = int64((30*time.Minute + 15*time.Minute) / time.Millisecond), int64((30*time.Minute + time.Hour) / time.Millisecond)
	gotDefault := taskTTLOf(t, p, startTask(t, p, "true"))
	if gotDefault != wantDefault {
		t.Errorf("a task asked without a ttl got ttl %d ms; want the default %d", gotDefault, wantDefault)
		broken++
	}
	tenDays := int64(10 * 24 * time.Hour / time.Millisecond)
	gotCap := taskTTLOf(t, p, startTaskWithTTL(t, p, &tenDays, "true"))
	if gotCap != wantCap {
		t.Errorf("a task asked with a ttl of ten days got %d ms; want the cap %d", gotCap, wantCap)
		broken++
	}
	before := sampleResources(t, p)
	var ids []string
	for range n {
		id := startTask(t, p, "sh", "-c", "head -c 32768 /dev/zero | tr '\\0' a")
		waitTask(t, p, id)
		ids = append(ids, id)
	}
	held := sampleResources(t, p)
	if first := taskResultText(t, p, ids[0]); !strings.Contains(first, "latest 64 tasks") {
		t.Errorf("the result of the session's oldest of %d tasks: %.300s", n, first)
		broken++
	}
	if last := taskResultText(t, p, ids[n-1]); !strings.Contains(last, strings.Repeat("a", 1000)) {
		t.Errorf("the result of the session's latest task: %.300s", last)
		broken++
	}
	p.endSession()
	p.waitLog(30*time.Second, "workspace removed", map[string]any{"reason": "session ended"})
	after := sampleResources(t, p)
	perResult := float64(held.HeapKiB-before.HeapKiB) / 64
	kept := after.HeapKiB - before.HeapKiB
	if kept > 4<<10 {
		t.Errorf("the server's heap is %d KiB larger after the session of %d tasks ended than before them (%d KiB, %d KiB with the tasks held)", kept, n, before.HeapKiB, held.HeapKiB)
		broken++
	}
	recordBound(t, promiseFigure{Class: "tasks: a session runs 120 task calls with 32 KiB of output each, asking for no ttl, then ends (HTTP DELETE); one more asks a ttl of ten days",
		Tried: n + 2, Broken: broken,
		Measured: fmt.Sprintf("no ttl got a ttl of %d min, ten days got %d min; after 120 tasks the heap held %.0f KiB per kept result (the latest 64 whole), and %d KiB more than before the tasks once the session ended (heap %d, %d, %d KiB)",
			gotDefault/60000, gotCap/60000, perResult, kept, before.HeapKiB, held.HeapKiB, after.HeapKiB)})
}

// startTaskWithTTL is startTask asking for a ttl.
func startTaskWithTTL(t *testing.T, p *proc, ttl *int64, argv ...string) string {
	t.Helper()
	req := shellRequest(argv...)
	req.Params.Task = &mcp.TaskParams{TTL: ttl}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	before, err := p.client.ListTasks(ctx, mcp.ListTasksRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.client.CallTool(ctx, req); err != nil && !strings.Contains(err.Error(), "content is missing") {
		t.Fatalf("a task-augmented call: %v", err)
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
