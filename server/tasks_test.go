package server

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestTaskCountsBoundEachSession(t *testing.T) {
	var tc taskCounts
	for range MaxTasksPerSession {
		if err := tc.reserve("a"); err != nil {
			t.Fatal(err)
		}
	}
	if err := tc.reserve("a"); err == nil || !strings.Contains(err.Error(), "the most allowed") {
		t.Errorf("task %d of one session: %v, want the limit named", MaxTasksPerSession+1, err)
	}
	if err := tc.reserve("b"); err != nil {
		t.Errorf("another session was refused: %v", err)
	}
	tc.created("t1", "a")
	ctx, cancel := context.WithCancel(context.Background())
	tc.running("t1", cancel)
	tc.ended("t1")
	tc.ended("t1") // a second terminal hook releases nothing more
	if ctx.Err() == nil {
		t.Error("the ended task's work was not stopped")
	}
	if err := tc.reserve("a"); err != nil {
		t.Errorf("after a task ended: %v", err)
	}
	if err := tc.reserve("a"); err == nil {
		t.Error("one ended task released two places")
	}
	late, stop := context.WithCancel(context.Background())
	defer stop()
	tc.running("gone", func() { stop() }) // cancelled before its work began
	if late.Err() == nil {
		t.Error("the work of a task that had already ended was not stopped")
	}
}

// TestTaskCapHoldsWhateverElseTheCallCarries starts task calls of a tool
// that runs until the test ends, each with a member the server's checks do
// not need but used to choke on ("uri": 5, which tools/call ignores): each
// must get its task, and past MaxTasksPerSession they must be refused as
// any others are. (Such a call used to skip the reservation: the task hook
// then panicked, or the call went past the cap.)
func TestTaskCapHoldsWhateverElseTheCallCarries(t *testing.T) {
	s := newTestServer(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	s.mcp.AddTool(mcp.NewTool("wait", mcp.WithTaskSupport(mcp.TaskSupportOptional)), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return mcp.NewToolResultText("done"), nil
	})
	c := serveStdioPipe(t, s)
	c.call(initializeBody)
	for i := range MaxTasksPerSession + 1 {
		answer := c.call(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"wait","arguments":{},"uri":5,"task":{}}}`, 10+i))
		if i < MaxTasksPerSession && !strings.Contains(answer, `"taskId"`) {
			t.Fatalf("task call %d was not given a task: %s", i+1, answer)
		}
		if i == MaxTasksPerSession && !strings.Contains(answer, "the most allowed") {
			t.Fatalf("task call %d of at most %d was not refused: %s", i+1, MaxTasksPerSession, answer)
		}
	}
}
