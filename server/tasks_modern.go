package server

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/server/mcpgoadapt"
)

// Tasks for 2026-07-28 requests: the io.modelcontextprotocol/tasks
// extension (SEP-2663). mcp-go v1.2.1 serves the tasks of the 2025
// revisions only (scoped to a session, with tasks/result), so these are
// served here, in front of it (mcpgoadapt.Interceptor):
//
//   - A tools/call of a long tool (one that offers tasks to 2025 sessions)
//     whose client declares the extension in its per-request capabilities,
//     with a handle of its principal, is answered at once with a task
//     (resultType "task"); the call itself runs on through mcp-go, with a
//     context only tasks/cancel ends.
//   - tasks/get gives the task's status, and its result (or error) once
//     it has one; tasks/cancel stops the work (the command in the
//     workspace is killed); tasks/update is refused, since these tasks
//     never ask for input.
//   - A task is its principal's alone: another principal's task id gets
//     the same error as one never issued. Each principal has at most
//     MaxModernTasks working and keeps the results of its latest
//     MaxModernTaskResults, each until its ttl (from its creation) ends.

const (
	// tasksExtension is the extension's identifier.
	tasksExtension = "io.modelcontextprotocol/tasks"
	// MaxModernTasks bounds the tasks one principal may have working.
	MaxModernTasks = 16
	// MaxModernTaskResults bounds the finished tasks one principal keeps.
	MaxModernTaskResults = 64
	// modernTaskPoll is the poll interval a task suggests.
	modernTaskPoll = time.Second
)

// Task statuses.
const (
	taskWorking   = "working"
	taskCompleted = "completed"
	taskFailed    = "failed"
	taskCancelled = "cancelled"
)

// modernTask is one task of a 2026-07-28 request.
type modernTask struct {
	id, principal    string
	status, message  string
	created, updated time.Time
	ttl              time.Duration
	result, rpcErr   json.RawMessage // once completed or failed
	cancel           context.CancelFunc
}

// modernTasks holds the tasks of 2026-07-28 requests. It is safe for
// concurrent use.
type modernTasks struct {
	mu   sync.Mutex
	byID map[string]*modernTask
	// tools are the tools a task may run.
	tools map[string]bool
	// serve runs a request through mcp-go (MCPServer.HandleMessage).
	serve func(ctx context.Context, msg json.RawMessage) mcp.JSONRPCMessage
	// handleOK reports whether handle is principal's.
	handleOK func(handle, principal string) bool
	ttl      time.Duration
	now      func() time.Time
}

func newModernTasks(tools map[string]bool, ttl time.Duration, serve func(context.Context, json.RawMessage) mcp.JSONRPCMessage,
	handleOK func(handle, principal string) bool) *modernTasks {
	return &modernTasks{byID: map[string]*modernTask{}, tools: tools, serve: serve, handleOK: handleOK, ttl: ttl, now: time.Now}
}

// interceptor is how the transports hand the extension's requests here.
func (t *modernTasks) interceptor() mcpgoadapt.Interceptor {
	return mcpgoadapt.Interceptor{Markers: [][]byte{[]byte("tasks")}, Answer: t.answer}
}

// answer serves the extension's requests of the 2026-07-28 revision.
func (t *modernTasks) answer(ctx context.Context, head *mcpgoadapt.Head, msg json.RawMessage) (any, bool) {
	if !mcp.IsModernProtocol(head.ProtocolVersion(mcp.MetaKeyProtocolVersion)) {
		return nil, false
	}
	switch head.MethodName() {
	case string(mcp.MethodToolsCall):
		return t.create(ctx, head, msg)
	case string(mcp.MethodTasksGet), string(mcp.MethodTasksCancel), "tasks/update":
		var req struct {
			Params struct {
				TaskID string `json:"taskId"`
			} `json:"params"`
		}
		if err := json.Unmarshal(msg, &req); err != nil || req.Params.TaskID == "" {
			return rpcError(head.ID, mcp.INVALID_PARAMS, head.MethodName()+" needs params.taskId, the id a tools/call's task result gave"), true
		}
		return t.method(head.ID, head.MethodName(), principalFrom(ctx), req.Params.TaskID), true
	}
	return nil, false
}

// declaresTasks reports whether a request's client declares the extension
// in its per-request capabilities.
func declaresTasks(head *mcpgoadapt.Head) bool {
	raw, ok := head.Params.Meta[mcp.MetaKeyClientCapabilities]
	if !ok {
		return false
	}
	var caps struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if json.Unmarshal(raw, &caps) != nil {
		return false
	}
	_, ok = caps.Extensions[tasksExtension]
	return ok
}

// create answers a tools/call with a task when the call may have one; the
// others (another tool, a client without the extension, a handle that is
// not its principal's) are left to mcp-go, which serves them as calls.
func (t *modernTasks) create(ctx context.Context, head *mcpgoadapt.Head, msg json.RawMessage) (any, bool) {
	if !declaresTasks(head) {
		return nil, false
	}
	var call struct {
		Params struct {
			Name      string `json:"name"`
			Arguments struct {
				Workspace string `json:"workspace"`
			} `json:"arguments"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &call) != nil || !t.tools[call.Params.Name] || call.Params.Arguments.Workspace == "" {
		return nil, false
	}
	principal := principalFrom(ctx)
	if !t.handleOK(call.Params.Arguments.Workspace, principal) {
		return nil, false // mcp-go answers it with the handle's error
	}
	work, err := detachedRequest(msg)
	if err != nil {
		return nil, false
	}
	run, cancel := context.WithCancel(context.WithValue(context.WithoutCancel(ctx), taskCallKey{}, true))
	task, err := t.start(principal, cancel)
	if err != nil {
		cancel()
		return rpcResult(head.ID, map[string]any{"resultType": mcp.ResultTypeComplete, "isError": true,
			"content": []mcp.Content{mcp.NewTextContent(err.Error())}}), true
	}
	go func() {
		defer cancel()
		t.finish(task, t.serve(run, work))
	}()
	return rpcResult(head.ID, t.view(task, "task", false)), true
}

// detachedRequest is msg under an id of its own, so that nothing the
// client later sends under the original id reaches the task's call.
func detachedRequest(msg json.RawMessage) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(msg, &m); err != nil {
		return nil, err
	}
	m["id"] = json.RawMessage(`"wink-task-` + rand.Text() + `"`)
	return json.Marshal(m)
}

// start makes a working task of principal, unless principal has
// MaxModernTasks working.
func (t *modernTasks) start(principal string, cancel context.CancelFunc) (*modernTask, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.forget()
	working := 0
	for _, task := range t.byID {
		if task.principal == principal && task.status == taskWorking {
			working++
		}
	}
	if working >= MaxModernTasks {
		return nil, fmt.Errorf("%d tasks of yours are working, the most one client may have: wait for one to finish (tasks/get) or cancel one (tasks/cancel), then call again", MaxModernTasks)
	}
	now := t.now()
	task := &modernTask{id: "wtk_" + rand.Text() + rand.Text(), principal: principal, status: taskWorking, message: "the call is running",
		created: now, updated: now, ttl: t.ttl, cancel: cancel}
	t.byID[task.id] = task
	return task, nil
}

// finish records the answer mcp-go gave the task's call; a cancelled task
// stays cancelled.
func (t *modernTasks) finish(task *modernTask, resp mcp.JSONRPCMessage) {
	var answer struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	data, err := json.Marshal(resp)
	if err == nil {
		err = json.Unmarshal(data, &answer)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if task.status != taskWorking {
		return
	}
	task.updated = t.now()
	switch {
	case err != nil || (answer.Result == nil && answer.Error == nil):
		task.status, task.message = taskFailed, "the call gave no answer"
		task.rpcErr, _ = json.Marshal(map[string]any{"code": mcp.INTERNAL_ERROR, "message": "the call gave no answer; the server is still running, try again"})
	case answer.Error != nil:
		task.status, task.message, task.rpcErr = taskFailed, "the call failed", answer.Error
	default:
		task.status, task.message, task.result = taskCompleted, "the call is done", answer.Result
	}
}

// method serves tasks/get, tasks/cancel and tasks/update for principal.
func (t *modernTasks) method(id json.RawMessage, method, principal, taskID string) any {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.forget()
	task, ok := t.byID[taskID]
	if !ok || task.principal != principal {
		return rpcError(id, mcp.INVALID_PARAMS, fmt.Sprintf("unknown task %q: no task of yours has that id (a finished task's result is kept for %s from its creation, and the latest %d)",
			taskID, t.ttl, MaxModernTaskResults))
	}
	switch method {
	case "tasks/update":
		return rpcError(id, mcp.INVALID_PARAMS, fmt.Sprintf("task %s asks for no input (it is %s): wink-mcp's tasks never do, so tasks/update has nothing to answer", taskID, task.status))
	case string(mcp.MethodTasksCancel):
		if task.status == taskWorking {
			task.status, task.message, task.updated = taskCancelled, "cancelled by the client; its command was stopped", t.now()
			task.cancel()
		}
		return rpcResult(id, map[string]any{"resultType": mcp.ResultTypeComplete})
	}
	return rpcResult(id, t.view(task, mcp.ResultTypeComplete, true))
}

// view is a task as the extension writes it; whole adds its result or
// error. t.mu is held, or task is not yet shared.
func (t *modernTasks) view(task *modernTask, resultType mcp.ResultType, whole bool) map[string]any {
	v := map[string]any{
		"resultType":     resultType,
		"taskId":         task.id,
		"status":         task.status,
		"statusMessage":  task.message,
		"createdAt":      task.created.UTC().Format(time.RFC3339Nano),
		"lastUpdatedAt":  task.updated.UTC().Format(time.RFC3339Nano),
		"ttlMs":          task.ttl.Milliseconds(),
		"pollIntervalMs": modernTaskPoll.Milliseconds(),
	}
	if whole && task.result != nil {
		v["result"] = task.result
	}
	if whole && task.rpcErr != nil {
		v["error"] = task.rpcErr
	}
	return v
}

// forget drops the finished tasks past their ttl, and each principal's
// oldest finished ones past MaxModernTaskResults. t.mu is held.
func (t *modernTasks) forget() {
	now := t.now()
	finished := map[string][]*modernTask{}
	for id, task := range t.byID {
		if task.status == taskWorking {
			continue
		}
		if now.After(task.created.Add(task.ttl)) {
			delete(t.byID, id)
			continue
		}
		finished[task.principal] = append(finished[task.principal], task)
	}
	for _, list := range finished {
		if len(list) <= MaxModernTaskResults {
			continue
		}
		slices.SortFunc(list, func(a, b *modernTask) int { return a.updated.Compare(b.updated) })
		for _, task := range list[:len(list)-MaxModernTaskResults] {
			delete(t.byID, task.id)
		}
	}
}

// rpcResult is a JSON-RPC answer with result.
func rpcResult(id json.RawMessage, result any) map[string]any {
	return map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "id": id, "result": result}
}

// rpcError is a JSON-RPC error answer.
func rpcError(id json.RawMessage, code int, message string) map[string]any {
	return map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "id": id, "error": map[string]any{"code": code, "message": message}}
}
