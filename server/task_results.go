package server

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// mcp-go keeps a task, and its result, until the task's ttl ends, and for
// ever when the client gives none, whether or not the session lives on.
// So every task call gets a ttl here, and the results a session's tasks
// hold are bounded and go when the session ends.
const (
	// taskResultWait is how long a task's result waits for the client
	// after the longest command a task may run (--max-command-timeout),
	// when the client asks for no ttl: a task's ttl counts from its
	// creation, and mcp-go drops a task still running at its end.
	taskResultWait = 15 * time.Minute
	// maxTaskResultWait caps what a client's ttl may add to the longest
	// command.
	maxTaskResultWait = time.Hour
	// MaxHeldTaskResults is how many task results one session keeps
	// whole; an older one still within its ttl is dropped, and
	// tasks/result then says so.
	MaxHeldTaskResults = 64
)

// taskTTL is the ttl, in milliseconds, a task call gets for the one its
// client asked for (nil: none).
func (s *Server) taskTTL(asked *int64) int64 {
	def := (s.cfg.MaxCommandTimeout + taskResultWait).Milliseconds()
	limit := (s.cfg.MaxCommandTimeout + maxTaskResultWait).Milliseconds()
	if asked == nil || *asked <= 0 {
		return def
	}
	return min(*asked, limit)
}

// boundTaskTTL gives a task call the ttl taskTTL says, before mcp-go
// makes its task (the client reads it in the task it gets back).
func (s *Server) boundTaskTTL(_ context.Context, _ any, req *mcp.CallToolRequest) {
	if req.Params.Task == nil {
		return
	}
	ttl := s.taskTTL(req.Params.Task.TTL)
	req.Params.Task.TTL = &ttl
}

// holdTaskResults is the outermost tool middleware: a task call's result
// is what mcp-go keeps for tasks/result, so it is kept in a form the
// session can let go of (see taskResults).
func (s *Server) holdTaskResults(next mcpserver.ToolHandlerFunc) mcpserver.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := next(ctx, req)
		slot, _ := ctx.Value(requestSlotKey{}).(*requestSlot)
		if err != nil || res == nil || slot == nil || !slot.task.Load() {
			return res, err
		}
		session := mcpserver.ClientSessionFromContext(ctx)
		if session == nil {
			return res, err
		}
		return s.results.hold(session.SessionID(), res, time.Now().Add(time.Duration(s.taskTTL(taskTTLOf(req)))*time.Millisecond)), nil
	}
}

func taskTTLOf(req mcp.CallToolRequest) *int64 {
	if req.Params.Task == nil {
		return nil
	}
	return req.Params.Task.TTL
}

// taskResults holds, by session, the results of the session's task calls
// that mcp-go may still hand out, newest last. It is safe for concurrent use.
type taskResults struct {
	mu        sync.Mutex
	bySession map[string][]*heldResult
}

// hold returns res, which mcp-go keeps until expires, in a form that can
// be dropped; it forgets the session's results past their expiry and drops
// its oldest past MaxHeldTaskResults.
func (t *taskResults) hold(session string, res *mcp.CallToolResult, expires time.Time) *mcp.CallToolResult {
	h, out := newHeldResult(res, expires)
	t.mu.Lock()
	if t.bySession == nil {
		t.bySession = map[string][]*heldResult{}
	}
	now := time.Now()
	list := slices.DeleteFunc(t.bySession[session], func(old *heldResult) bool { return now.After(old.expires) })
	list = append(list, h)
	var dropped []*heldResult
	if len(list) > MaxHeldTaskResults {
		dropped = slices.Clone(list[:len(list)-MaxHeldTaskResults])
		list = slices.Delete(list, 0, len(list)-MaxHeldTaskResults)
	}
	t.bySession[session] = list
	t.mu.Unlock()
	for _, d := range dropped {
		d.drop(fmt.Sprintf("this task's result was dropped: a session keeps the results of its latest %d tasks; fetch results with tasks/result as tasks finish", MaxHeldTaskResults))
	}
	return out
}

// endSession drops every result the session's tasks held.
func (t *taskResults) endSession(session string) {
	t.mu.Lock()
	list := t.bySession[session]
	delete(t.bySession, session)
	t.mu.Unlock()
	for _, h := range list {
		h.drop("this task's result was dropped: its session ended")
	}
}

// heldResult is a task result's content, as JSON, until it is dropped.
type heldResult struct {
	parts      []*heldContent
	structured *heldJSON
	expires    time.Time // when mcp-go lets the task go
}

func newHeldResult(res *mcp.CallToolResult, expires time.Time) (*heldResult, *mcp.CallToolResult) {
	h := &heldResult{expires: expires}
	out := *res
	out.Content = make([]mcp.Content, 0, len(res.Content))
	for _, c := range res.Content {
		data, err := json.Marshal(c)
		if err != nil {
			out.Content = append(out.Content, c) // kept as it is; nothing to hold
			continue
		}
		part, raw := &heldContent{}, json.RawMessage(data)
		part.raw.Store(&raw)
		h.parts = append(h.parts, part)
		out.Content = append(out.Content, part)
	}
	if res.StructuredContent != nil {
		if data, err := json.Marshal(res.StructuredContent); err == nil {
			raw := json.RawMessage(data)
			h.structured = &heldJSON{}
			h.structured.raw.Store(&raw)
			out.StructuredContent = h.structured
		}
	}
	return h, &out
}

// drop lets the result go; what tasks/result gives after is why.
func (h *heldResult) drop(why string) {
	data, _ := json.Marshal(mcp.NewTextContent(why))
	note := json.RawMessage(data)
	for i, p := range h.parts {
		if i == 0 {
			p.raw.Store(&note)
		} else {
			p.raw.Store(nil)
		}
	}
	if h.structured != nil {
		h.structured.raw.Store(nil)
	}
}

// heldContent is one content item of a held result, swapped atomically
// when it is dropped (mcp-go may be writing the result out meanwhile).
type heldContent struct {
	mcp.TextContent // only for mcp.Content's marker method; never written
	raw             atomic.Pointer[json.RawMessage]
}

// MarshalJSON writes the item, or an empty text once dropped.
func (c *heldContent) MarshalJSON() ([]byte, error) {
	if p := c.raw.Load(); p != nil {
		return *p, nil
	}
	return []byte(`{"type":"text","text":""}`), nil
}

// heldJSON is a held result's structured content.
type heldJSON struct {
	raw atomic.Pointer[json.RawMessage]
}

// MarshalJSON writes the value, or an empty object once dropped.
func (j *heldJSON) MarshalJSON() ([]byte, error) {
	if p := j.raw.Load(); p != nil {
		return *p, nil
	}
	return []byte(`{}`), nil
}
