package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/server/mcpgoadapt"
)

// fakeCalls stands in for mcp-go in the unit tests of modernTasks: each
// call waits until release or its context ends.
type fakeCalls struct {
	mu        sync.Mutex
	release   chan struct{}
	cancelled int
}

func (f *fakeCalls) serve(ctx context.Context, msg json.RawMessage) mcp.JSONRPCMessage {
	select {
	case <-f.release:
		return mcp.NewJSONRPCResultResponse(mcp.NewRequestId("x"), mcp.NewToolResultText("done: "+string(msg[:10])))
	case <-ctx.Done():
		f.mu.Lock()
		f.cancelled++
		f.mu.Unlock()
		return mcp.NewJSONRPCResultResponse(mcp.NewRequestId("x"), mcp.NewToolResultError("cancelled"))
	}
}

func modernRequest(t *testing.T, id int, method, params string) (*mcpgoadapt.Head, json.RawMessage) {
	t.Helper()
	msg := json.RawMessage(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
	head, err := mcpgoadapt.DecodeHead(msg)
	if err != nil {
		t.Fatal(err)
	}
	return head, msg
}

const (
	tasksMeta    = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	legacyMeta   = `"_meta":{}`
	noExtMeta    = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	shellOnAlice = `"name":"podman_shell","arguments":{"command":["sleep","60"],"workspace":"wsh_alice"}`
)

func asPrincipal(p string) context.Context {
	return context.WithValue(context.Background(), principalKey{}, p)
}

// do sends one request to tasks and returns its answer as JSON.
func do(t *testing.T, tasks *modernTasks, principal, method, params string) (map[string]any, bool) {
	t.Helper()
	head, msg := modernRequest(t, 7, method, params)
	answer, ok := tasks.answer(asPrincipal(principal), head, msg)
	if !ok {
		return nil, false
	}
	data, _ := json.Marshal(answer)
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out, true
}

func newTestTasks(f *fakeCalls) *modernTasks {
	return newModernTasks(map[string]bool{"podman_shell": true}, time.Hour, f.serve,
		func(handle, principal string) bool { return handle == "wsh_"+principal })
}

// Only a 2026-07-28 call of a task tool, from a client that declares the
// extension, with a handle of its principal, becomes a task.
func TestModernTaskIsMadeOnlyWhenItMayBe(t *testing.T) {
	f := &fakeCalls{release: make(chan struct{})}
	tasks := newTestTasks(f)
	for name, c := range map[string]struct{ principal, params string }{
		"a 2025 call":                {"alice", `{` + shellOnAlice + `,` + legacyMeta + `}`},
		"a client without the ext":   {"alice", `{` + shellOnAlice + `,` + noExtMeta + `}`},
		"a tool without tasks":       {"alice", `{"name":"ls","arguments":{"workspace":"wsh_alice"},` + tasksMeta + `}`},
		"another principal's handle": {"bob", `{` + shellOnAlice + `,` + tasksMeta + `}`},
		"no handle":                  {"alice", `{"name":"podman_shell","arguments":{},` + tasksMeta + `}`},
	} {
		if _, ok := do(t, tasks, c.principal, "tools/call", c.params); ok {
			t.Errorf("%s was made a task", name)
		}
	}
	created, ok := do(t, tasks, "alice", "tools/call", `{`+shellOnAlice+`,`+tasksMeta+`}`)
	result, _ := created["result"].(map[string]any)
	if !ok || result["resultType"] != "task" || result["status"] != "working" || !strings.HasPrefix(fmt.Sprint(result["taskId"]), "wtk_") {
		t.Fatalf("created %v", created)
	}
	close(f.release)
}

// A task is its principal's alone: another principal's get, cancel and
// update see an unknown task, exactly as for an id never issued.
func TestModernTaskIsScopedToItsPrincipal(t *testing.T) {
	f := &fakeCalls{release: make(chan struct{})}
	tasks := newTestTasks(f)
	created, _ := do(t, tasks, "alice", "tools/call", `{`+shellOnAlice+`,`+tasksMeta+`}`)
	id := created["result"].(map[string]any)["taskId"].(string)
	never, _ := do(t, tasks, "bob", "tasks/get", `{"taskId":"wtk_never",`+tasksMeta+`}`)
	neverText := strings.ReplaceAll(fmt.Sprint(never["error"]), "wtk_never", "ID")
	for _, method := range []string{"tasks/get", "tasks/cancel", "tasks/update"} {
		got, _ := do(t, tasks, "bob", method, `{"taskId":"`+id+`",`+tasksMeta+`}`)
		if text := strings.ReplaceAll(fmt.Sprint(got["error"]), id, "ID"); text != neverText || !strings.Contains(text, "unknown task") {
			t.Errorf("bob's %s of alice's task: %v; want exactly the unknown task's %v", method, got, never)
		}
	}
	got, _ := do(t, tasks, "alice", "tasks/get", `{"taskId":"`+id+`",`+tasksMeta+`}`)
	if got["result"].(map[string]any)["status"] != "working" {
		t.Fatalf("alice's task: %v", got)
	}
	update, _ := do(t, tasks, "alice", "tasks/update", `{"taskId":"`+id+`",`+tasksMeta+`}`)
	if !strings.Contains(fmt.Sprint(update["error"]), "asks for no input") {
		t.Errorf("tasks/update: %v", update)
	}
	close(f.release)
	waitStatus(t, tasks, "alice", id, "completed")
	got, _ = do(t, tasks, "alice", "tasks/get", `{"taskId":"`+id+`",`+tasksMeta+`}`)
	if res := got["result"].(map[string]any)["result"]; !strings.Contains(fmt.Sprint(res), "done: ") {
		t.Errorf("the completed task's result: %v", got)
	}
}

func waitStatus(t *testing.T, tasks *modernTasks, principal, id, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, _ := do(t, tasks, principal, "tasks/get", `{"taskId":"`+id+`",`+tasksMeta+`}`)
		if res, ok := got["result"].(map[string]any); ok && res["status"] == want {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("task %s: %v; want %s", id, got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A crowd of task calls from one principal stops at MaxModernTasks with an
// error naming the limit and what to do; another principal is untouched; a
// cancel stops the call's work and makes room; a finished task goes when
// its ttl ends, and is then unknown, saying how long results are kept.
func TestModernTasksAreBounded(t *testing.T) {
	f := &fakeCalls{release: make(chan struct{})}
	tasks := newTestTasks(f)
	now := time.Now()
	var clock sync.Mutex
	tasks.now = func() time.Time { clock.Lock(); defer clock.Unlock(); return now }
	var ids []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	refused := 0
	for range 3 * MaxModernTasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			created, _ := do(t, tasks, "alice", "tools/call", `{`+shellOnAlice+`,`+tasksMeta+`}`)
			res := created["result"].(map[string]any)
			mu.Lock()
			defer mu.Unlock()
			if res["isError"] == true {
				refused++
				if text := fmt.Sprint(res["content"]); !strings.Contains(text, fmt.Sprint(MaxModernTasks)) || !strings.Contains(text, "tasks/cancel") {
					t.Errorf("refusal %s does not name the limit and what to do", text)
				}
				return
			}
			ids = append(ids, res["taskId"].(string))
		}()
	}
	wg.Wait()
	if len(ids) != MaxModernTasks || refused != 2*MaxModernTasks {
		t.Fatalf("%d made, %d refused; want %d and %d", len(ids), refused, MaxModernTasks, 2*MaxModernTasks)
	}
	if created, _ := do(t, tasks, "bob", "tools/call", `{"name":"podman_shell","arguments":{"workspace":"wsh_bob"},`+tasksMeta+`}`); created["result"].(map[string]any)["resultType"] != "task" {
		t.Errorf("bob: %v", created)
	}
	if ack, _ := do(t, tasks, "alice", "tasks/cancel", `{"taskId":"`+ids[0]+`",`+tasksMeta+`}`); ack["result"] == nil {
		t.Fatalf("cancel: %v", ack)
	}
	waitStatus(t, tasks, "alice", ids[0], "cancelled")
	deadline := time.Now().Add(10 * time.Second)
	for f.mu.Lock(); f.cancelled == 0; f.mu.Lock() {
		f.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("the cancelled task's call was not cancelled")
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.mu.Unlock()
	if created, _ := do(t, tasks, "alice", "tools/call", `{`+shellOnAlice+`,`+tasksMeta+`}`); created["result"].(map[string]any)["resultType"] != "task" {
		t.Errorf("after a cancel: %v", created)
	}
	clock.Lock()
	now = now.Add(time.Hour + time.Second)
	clock.Unlock()
	got, _ := do(t, tasks, "alice", "tasks/get", `{"taskId":"`+ids[0]+`",`+tasksMeta+`}`)
	if text := fmt.Sprint(got["error"]); !strings.Contains(text, "unknown task") || !strings.Contains(text, "kept for 1h0m0s") {
		t.Errorf("a task past its ttl: %v", got)
	}
	close(f.release)
}
