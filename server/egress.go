package server

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// errCannotAsk refuses a question to a client that cannot put it to its user.
var errCannotAsk = errors.New("the client does not support elicitation, so the user cannot be asked")

// clientSessions are the MCP sessions by id, and the tool calls each has
// in flight, for the questions the server asks outside any request of
// theirs (see askEgress).
type clientSessions struct {
	m sync.Map

	mu    sync.Mutex
	calls map[string][]context.Context
}

func (c *clientSessions) add(s mcpserver.ClientSession)    { c.m.Store(s.SessionID(), s) }
func (c *clientSessions) remove(s mcpserver.ClientSession) { c.m.Delete(s.SessionID()) }

func (c *clientSessions) get(id string) mcpserver.ClientSession {
	v, _ := c.m.Load(id)
	s, _ := v.(mcpserver.ClientSession)
	return s
}

// calling records a tool call of session id in flight, with its context,
// until the returned function runs.
func (c *clientSessions) calling(ctx context.Context, id string) func() {
	c.mu.Lock()
	if c.calls == nil {
		c.calls = map[string][]context.Context{}
	}
	c.calls[id] = append(c.calls[id], ctx)
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		list := c.calls[id]
		for i, x := range list {
			if x == ctx {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(c.calls, id)
		} else {
			c.calls[id] = list
		}
	}
}

// callContext returns the context of a call session id has in flight, the
// latest, or nil. Over streamable HTTP a request to the client made with it
// goes on that call's response stream, which the client is reading.
func (c *clientSessions) callContext(id string) context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if list := c.calls[id]; len(list) > 0 {
		return list[len(list)-1]
	}
	return nil
}

// askEgress asks the user of session id, by MCP elicitation, whether the
// workspace may reach host on port for the rest of the session.
//
// A workspace of a 2026-07-28 handle has no session to ask on: its call's
// result asks instead (see egressQuestions), and the answer the retried
// call brings is the answer here.
func (s *Server) askEgress(ctx context.Context, id, host string, port int) (bool, error) {
	if allow, ok := s.questions.answered(id, host, port); ok {
		s.log.Info("egress question answered", "event", "egress_asked", "session", s.mgr.SessionHash(id), "host", host, "port", port, "allowed", allow)
		return allow, nil
	}
	if err := s.questions.putToCall(id, host, port); err != nil {
		return false, err
	}
	cs := s.clients.get(id)
	if cs == nil {
		return false, errors.New("the session has no client any more")
	}
	info, ok := cs.(mcpserver.SessionWithClientInfo)
	if !ok || info.GetClientCapabilities().Elicitation == nil {
		return false, errCannotAsk
	}
	if _, ok := cs.(mcpserver.SessionWithElicitation); !ok {
		return false, errCannotAsk
	}
	req := mcp.ElicitationRequest{Params: mcp.ElicitationParams{
		Message: fmt.Sprintf("The workspace wants to connect to %s on port %d, which --egress does not allow. Allow it for this session?", host, port),
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"allow": map[string]any{"type": "boolean", "title": "Allow " + host + " for this session", "default": false},
			},
			"required": []string{"allow"},
		},
	}}
	// The command that wants the host is most likely running in a call of
	// this session: ask on that call's stream, bounded by ctx too.
	askCtx := s.mcp.WithContext(ctx, cs)
	if call := s.clients.callContext(id); call != nil {
		var cancel context.CancelFunc
		askCtx, cancel = context.WithCancel(call)
		defer cancel()
		stop := context.AfterFunc(ctx, cancel)
		defer stop()
	}
	res, err := s.mcp.RequestElicitation(askCtx, req)
	if err != nil {
		return false, err
	}
	content, _ := res.Content.(map[string]any)
	allow, _ := content["allow"].(bool)
	yes := res.Action == mcp.ElicitationResponseActionAccept && allow
	s.log.Info("egress question answered", "event", "egress_asked", "session", s.mgr.SessionHash(id), "host", host, "port", port,
		"action", string(res.Action), "allowed", yes)
	return yes, nil
}
