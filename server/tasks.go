package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/server/mcpgoadapt"
)

// MaxTasksPerSession bounds the task-augmented tool calls one session may
// have running, so that a client cannot start work without end by asking
// for tasks that each return at once.
const MaxTasksPerSession = 16

// A task-augmented tool call (MCP tasks, revision 2025-11-25) is answered
// at once with a task, and mcp-go runs the tool on in the background, with
// a context derived from the request's, which mcp-go itself cancels once
// the answer is written (mark3labs/mcp-go#897, open). So checkRequest marks the request's slot as a
// task call, the task hooks record the task's id in it, and observe runs a
// task call with a context of its own that only tasks/cancel ends (the
// session's end stops the work in the workspace).

// requestSlot is what checkRequest and the task hooks learn about one request.
type requestSlot struct {
	task    atomic.Bool // a task call
	created atomic.Bool // mcp-go made its task
	session atomic.Pointer[string]
	taskID  atomic.Pointer[string]
}

type requestSlotKey struct{}

// requestContext gives a request a slot; a task call mcp-go refused
// releases its reservation when the request ends.
func (s *Server) requestContext(ctx context.Context) context.Context {
	slot := &requestSlot{}
	context.AfterFunc(ctx, func() {
		if slot.task.Load() && !slot.created.Load() {
			if id := slot.session.Load(); id != nil {
				s.tasks.release(*id)
			}
		}
	})
	return context.WithValue(ctx, requestSlotKey{}, slot)
}

// taskCall checks a tools/call that asks for a task: the session must have
// room for one more.
func (s *Server) taskCall(ctx context.Context, head *mcpgoadapt.Head) error {
	if !head.AsksForTask() {
		return nil
	}
	slot, _ := ctx.Value(requestSlotKey{}).(*requestSlot)
	session := mcpserver.ClientSessionFromContext(ctx)
	if slot == nil || session == nil {
		return errors.New("this transport cannot carry task-augmented calls; call without task")
	}
	id := session.SessionID()
	if err := s.tasks.reserve(id); err != nil {
		return err
	}
	slot.session.Store(&id)
	slot.task.Store(true)
	return nil
}

// detachTask returns the context a task call runs with: ctx's values, and
// an end that only tasks/cancel (or the task's own end) brings. Any other
// call keeps ctx.
func (s *Server) detachTask(ctx context.Context) context.Context {
	slot, _ := ctx.Value(requestSlotKey{}).(*requestSlot)
	if slot == nil || !slot.task.Load() {
		return ctx
	}
	id := slot.taskID.Load()
	if id == nil {
		return ctx
	}
	detached, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.tasks.running(*id, cancel)
	return detached
}

// taskCounts counts each session's running task calls and holds the
// function that stops each.
type taskCounts struct {
	mu      sync.Mutex
	count   map[string]int    // by session
	tasks   map[string]string // session of each running task, by task id
	cancels map[string]context.CancelFunc
}

func (t *taskCounts) reserve(session string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.count == nil {
		t.count, t.tasks, t.cancels = map[string]int{}, map[string]string{}, map[string]context.CancelFunc{}
	}
	if t.count[session] >= MaxTasksPerSession {
		return fmt.Errorf("%d task calls are running in this session, the most allowed: wait for one to finish (tasks/get) or cancel one (tasks/cancel)", MaxTasksPerSession)
	}
	t.count[session]++
	return nil
}

func (t *taskCounts) release(session string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.count[session]--; t.count[session] <= 0 {
		delete(t.count, session)
	}
}

// created ties a reservation to the task mcp-go made for it.
func (t *taskCounts) created(taskID, session string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tasks[taskID] = session
}

// running records how to stop a task's work; a task that already ended
// (cancelled before its work began) is stopped at once.
func (t *taskCounts) running(taskID string, cancel context.CancelFunc) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.tasks[taskID]; !ok {
		cancel()
		return
	}
	t.cancels[taskID] = cancel
}

// ended stops a task's work and releases its reservation, once, whichever
// way it ended.
func (t *taskCounts) ended(taskID string) {
	t.mu.Lock()
	session, ok := t.tasks[taskID]
	cancel := t.cancels[taskID]
	delete(t.tasks, taskID)
	delete(t.cancels, taskID)
	t.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	if ok {
		t.release(session)
	}
}

// taskHooks keeps the counts as mcp-go makes and ends tasks.
func (s *Server) taskHooks() *mcpserver.TaskHooks {
	h := &mcpserver.TaskHooks{}
	h.AddOnTaskCreated(func(ctx context.Context, m mcpserver.TaskMetrics) {
		if slot, ok := ctx.Value(requestSlotKey{}).(*requestSlot); ok {
			slot.taskID.Store(&m.TaskID)
			slot.created.Store(true)
		}
		s.tasks.created(m.TaskID, m.SessionID)
	})
	end := func(_ context.Context, m mcpserver.TaskMetrics) { s.tasks.ended(m.TaskID) }
	h.AddOnTaskCompleted(end)
	h.AddOnTaskFailed(end)
	h.AddOnTaskCancelled(end)
	return h
}
