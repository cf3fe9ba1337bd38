package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// A 2026-07-28 request has no session, so the server cannot send it an
// elicitation while a command waits (as askEgress does for a 2025
// session). Under a handle, a connection to a host no --egress pattern
// names is refused at once instead, and the call that ran the command is
// answered with an InputRequiredResult that puts the question to the user.
// The client retries the same call with the user's answer and the
// requestState it got; the answer then holds for the handle's workspace
// (a yes lets the host through, a no refuses it without asking again),
// exactly as a 2025 session's answer holds for its session, and the
// command runs again.
//
// A requestState is 256 bits from crypto/rand, kept here with the question
// it stands for: it is good once, for the same principal, handle, tool and
// arguments, until egressQuestionTTL. Nothing waits for an answer that
// never comes: the call has ended, and the question is forgotten when it
// expires.

const (
	// egressQuestionTTL is how long a question waits for the client's
	// retry, and an answer for the command's next connection.
	egressQuestionTTL = 10 * time.Minute
	// MaxEgressQuestions bounds the questions one principal may have
	// waiting for an answer.
	MaxEgressQuestions = 16
	// egressInputKey is the key of the question in an InputRequiredResult.
	egressInputKey = "egress"
)

// errAskedByInput is why a connection of a 2026-07-28 call was refused:
// the user is asked in the call's result.
var errAskedByInput = errors.New("the user is asked in this call's result (input_required); the call runs again with the answer")

// errNotAskedInTask is why a connection of a task's call was refused: a
// task's result cannot carry the question.
var errNotAskedInTask = errors.New("a task cannot ask the user (the question rides on a call's own result); make the call without the tasks extension to be asked")

// taskCallKey marks the context of a call a task runs (see modernTasks).
type taskCallKey struct{}

// egressQuestion is a question waiting for the client's retry.
type egressQuestion struct {
	principal string
	session   string   // the handle's workspace session
	call      [32]byte // digest of the tool's name and arguments
	host      string
	port      int
	expires   time.Time
}

// egressAnswer is the user's answer, waiting for the retried command's
// connection.
type egressAnswer struct {
	allow   bool
	expires time.Time
}

// callQuestion is what one 2026-07-28 call in flight wants to ask: the
// first host a command of the call could not reach.
type callQuestion struct {
	host   string
	port   int
	inTask bool // the call is a task's: it cannot ask
}

// egressQuestions holds the egress questions of 2026-07-28 calls. It is
// safe for concurrent use.
type egressQuestions struct {
	mu      sync.Mutex
	pending map[string]*egressQuestion         // by requestState
	answers map[string]map[string]egressAnswer // by session, then host:port
	calls   map[string][]*callQuestion         // calls in flight, by session
	now     func() time.Time
}

func newEgressQuestions() *egressQuestions {
	return &egressQuestions{pending: map[string]*egressQuestion{}, answers: map[string]map[string]egressAnswer{},
		calls: map[string][]*callQuestion{}, now: time.Now}
}

// calling records a call of session in flight until the returned function
// runs; the callQuestion says what the call's commands wanted to ask.
func (q *egressQuestions) calling(session string, inTask bool) (*callQuestion, func()) {
	call := &callQuestion{inTask: inTask}
	q.mu.Lock()
	q.calls[session] = append(q.calls[session], call)
	q.mu.Unlock()
	return call, func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		list := q.calls[session]
		for i, c := range list {
			if c == call {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(q.calls, session)
		} else {
			q.calls[session] = list
		}
	}
}

// putToCall records host and port as the question of session's latest
// call in flight, unless it has one already, and returns why the
// connection is refused meanwhile; nil when session has no call to put it
// to.
func (q *egressQuestions) putToCall(session, host string, port int) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	list := q.calls[session]
	if len(list) == 0 {
		return nil
	}
	call := list[len(list)-1]
	if call.inTask {
		return errNotAskedInTask
	}
	if call.host == "" {
		call.host, call.port = host, port
	}
	return errAskedByInput
}

// answered takes the user's answer about host and port for session, if
// a retried call brought one.
func (q *egressQuestions) answered(session, host string, port int) (allow, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.forgetExpired()
	k := net.JoinHostPort(host, strconv.Itoa(port))
	a, ok := q.answers[session][k]
	if !ok {
		return false, false
	}
	delete(q.answers[session], k)
	if len(q.answers[session]) == 0 {
		delete(q.answers, session)
	}
	return a.allow, true
}

// ask records the question of a call and returns its requestState, or an
// error when principal has MaxEgressQuestions waiting already.
func (q *egressQuestions) ask(principal, session string, call [32]byte, host string, port int) (string, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.forgetExpired()
	waiting := 0
	for _, p := range q.pending {
		if p.principal == principal {
			waiting++
		}
	}
	if waiting >= MaxEgressQuestions {
		return "", fmt.Errorf("a command reached %s on port %d, which no --egress pattern allows, but %d questions to the user are already waiting for an answer, the most one client may have; answer them (retry those calls with the user's answer) or wait %s for them to expire, then call again",
			host, port, MaxEgressQuestions, egressQuestionTTL)
	}
	state := "weq_" + rand.Text() + rand.Text()
	q.pending[state] = &egressQuestion{principal: principal, session: session, call: call, host: host, port: port, expires: q.now().Add(egressQuestionTTL)}
	return state, nil
}

// answer checks the requestState of a retried call and records the user's
// answer for the command's next connection. A state that is unknown,
// expired, used, another principal's or another call's is refused.
func (q *egressQuestions) answer(principal, session string, call [32]byte, state string, responses mcp.InputResponses) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.forgetExpired()
	p, ok := q.pending[state]
	if !ok || subtle.ConstantTimeCompare([]byte(p.principal), []byte(principal)) != 1 {
		return fmt.Errorf("the requestState of this call is unknown: it was never given, was already used, or expired (a question waits %s); call again without requestState and inputResponses", egressQuestionTTL)
	}
	if p.session != session || p.call != call {
		return errors.New("the requestState of this call belongs to another call: retry the call that got it, with the same workspace, tool and arguments, or call again without requestState and inputResponses")
	}
	res := mcpserver.ElicitationResponse(responses, egressInputKey)
	if res == nil {
		return fmt.Errorf("the retried call has no answer under inputResponses.%s: answer the question the call's input_required result asked, then retry with it", egressInputKey)
	}
	delete(q.pending, state)
	content, _ := res.Content.(map[string]any)
	allow, _ := content["allow"].(bool)
	if q.answers[session] == nil {
		q.answers[session] = map[string]egressAnswer{}
	}
	q.answers[session][net.JoinHostPort(p.host, strconv.Itoa(p.port))] = egressAnswer{
		allow: res.Action == mcp.ElicitationResponseActionAccept && allow, expires: q.now().Add(egressQuestionTTL)}
	return nil
}

// forgetExpired drops the questions and answers past their time. q.mu is held.
func (q *egressQuestions) forgetExpired() {
	now := q.now()
	for state, p := range q.pending {
		if now.After(p.expires) {
			delete(q.pending, state)
		}
	}
	for session, byHost := range q.answers {
		for k, a := range byHost {
			if now.After(a.expires) {
				delete(byHost, k)
			}
		}
		if len(byHost) == 0 {
			delete(q.answers, session)
		}
	}
}

// egressQuestionParams is the question a call's InputRequiredResult asks.
func egressQuestionParams(host string, port int) mcp.ElicitationParams {
	return mcp.ElicitationParams{
		Message: fmt.Sprintf("The workspace wants to connect to %s on port %d, which --egress does not allow. Allow it for this workspace?", host, port),
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"allow": map[string]any{"type": "boolean", "title": "Allow " + host + " for this workspace", "default": false},
			},
			"required": []string{"allow"},
		},
	}
}

// callDigest identifies a call by its tool and arguments (encoding/json
// writes a map's keys sorted, so the same arguments give the same digest).
func callDigest(req mcp.CallToolRequest) [32]byte {
	args, _ := json.Marshal(req.GetArguments())
	return sha256.Sum256(append([]byte(req.Params.Name+"\x00"), args...))
}

// askByInput is the tool middleware of the flow: it takes a retried call's
// answer, runs the call, and turns a call whose command wanted a host no
// pattern names into an InputRequiredResult. It sits inside bindHandle,
// which names the handle's session; other calls pass through.
func (q *egressQuestions) askByInput(next mcpserver.ToolHandlerFunc) mcpserver.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		session := handleSessionFrom(ctx)
		if session == "" || !mcpserver.IsModernRequest(ctx) {
			return next(ctx, req)
		}
		// The digest re-encodes the arguments: only for a call that asks or answers.
		principal := principalFrom(ctx)
		if req.Params.RequestState != "" || len(req.Params.InputResponses) > 0 {
			if err := q.answer(principal, session, callDigest(req), req.Params.RequestState, req.Params.InputResponses); err != nil {
				return mcp.NewToolResultError(err.Error()), nil
			}
		}
		call, done := q.calling(session, ctx.Value(taskCallKey{}) != nil)
		res, err := next(ctx, req)
		done()
		if call.host == "" || err != nil {
			return res, err
		}
		state, askErr := q.ask(principal, session, callDigest(req), call.host, call.port)
		if askErr != nil {
			return mcp.NewToolResultError(askErr.Error()), nil
		}
		return mcpserver.NewInputRequestBuilder(state).Elicit(egressInputKey, egressQuestionParams(call.host, call.port)).ToolResult(), nil
	}
}
