package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

func egressAnswerOf(allow bool) mcp.InputResponses {
	action := mcp.ElicitationResponseActionDecline
	if allow {
		action = mcp.ElicitationResponseActionAccept
	}
	return mcp.InputResponses{egressInputKey: mcp.NewElicitationInputResponse(mcp.ElicitationResult{
		ElicitationResponse: mcp.ElicitationResponse{Action: action, Content: map[string]any{"allow": allow}}})}
}

// A requestState is good once, for its principal, session and call, until
// it expires; every other use is refused and leaves no answer behind.
func TestEgressQuestionStateIsBound(t *testing.T) {
	q := newEgressQuestions()
	now := time.Now()
	q.now = func() time.Time { return now }
	call := [32]byte{1}
	state, err := q.ask("alice", "s1", call, "example.org", 443)
	if err != nil || !strings.HasPrefix(state, "weq_") || len(state) < 50 {
		t.Fatalf("ask: %q, %v", state, err)
	}
	refused := []struct {
		name               string
		principal, session string
		call               [32]byte
		state              string
		responses          mcp.InputResponses
		want               string
	}{
		{"another principal", "bob", "s1", call, state, egressAnswerOf(true), "unknown"},
		{"forged", "alice", "s1", call, "weq_" + strings.Repeat("A", 52), egressAnswerOf(true), "unknown"},
		{"empty", "alice", "s1", call, "", egressAnswerOf(true), "unknown"},
		{"another workspace", "alice", "s2", call, state, egressAnswerOf(true), "another call"},
		{"other arguments", "alice", "s1", [32]byte{2}, state, egressAnswerOf(true), "another call"},
		{"no answer", "alice", "s1", call, state, nil, "no answer under inputResponses.egress"},
	}
	for _, c := range refused {
		if err := q.answer(c.principal, c.session, c.call, c.state, c.responses); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an error saying %q", c.name, err, c.want)
		}
	}
	for _, s := range []string{"s1", "s2"} {
		if _, ok := q.answered(s, "example.org", 443); ok {
			t.Fatalf("a refused retry left an answer for %s", s)
		}
	}
	if err := q.answer("alice", "s1", call, state, egressAnswerOf(true)); err != nil {
		t.Fatal(err)
	}
	if allow, ok := q.answered("s1", "example.org", 443); !ok || !allow {
		t.Errorf("answered: %v %v; want the user's yes", allow, ok)
	}
	if _, ok := q.answered("s1", "example.org", 443); ok {
		t.Error("an answer was taken twice")
	}
	if err := q.answer("alice", "s1", call, state, egressAnswerOf(true)); err == nil || !strings.Contains(err.Error(), "already used") {
		t.Errorf("a replayed state: %v", err)
	}

	// A no is an answer too; a stale state is refused.
	state, _ = q.ask("alice", "s1", call, "example.net", 80)
	if err := q.answer("alice", "s1", call, state, egressAnswerOf(false)); err != nil {
		t.Fatal(err)
	}
	if allow, ok := q.answered("s1", "example.net", 80); !ok || allow {
		t.Errorf("answered: %v %v; want the user's no", allow, ok)
	}
	state, _ = q.ask("alice", "s1", call, "example.com", 443)
	now = now.Add(egressQuestionTTL + time.Second)
	if err := q.answer("alice", "s1", call, state, egressAnswerOf(true)); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("a stale state: %v", err)
	}
	if len(q.pending) != 0 {
		t.Errorf("%d questions left after they expired", len(q.pending))
	}
}

// A crowd of questions from one principal stops at the bound with an error
// naming it; another principal is not touched, and expiry frees the room.
func TestEgressQuestionsAreBoundedPerPrincipal(t *testing.T) {
	q := newEgressQuestions()
	now := time.Now()
	var mu sync.Mutex
	q.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	var wg sync.WaitGroup
	errs := make(chan error, 3*MaxEgressQuestions)
	for i := range 3 * MaxEgressQuestions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := q.ask("alice", "s1", [32]byte{byte(i)}, fmt.Sprintf("h%d.example", i), 443)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	refused := 0
	for err := range errs {
		if err != nil {
			refused++
			if !strings.Contains(err.Error(), fmt.Sprint(MaxEgressQuestions)) || !strings.Contains(err.Error(), "wait") {
				t.Errorf("refusal %q does not name the limit and what to do", err)
			}
		}
	}
	if refused != 2*MaxEgressQuestions {
		t.Errorf("%d refused; want %d", refused, 2*MaxEgressQuestions)
	}
	if _, err := q.ask("bob", "s2", [32]byte{}, "example.org", 443); err != nil {
		t.Errorf("another principal: %v", err)
	}
	mu.Lock()
	now = now.Add(egressQuestionTTL + time.Second)
	mu.Unlock()
	if _, err := q.ask("alice", "s1", [32]byte{}, "example.org", 443); err != nil {
		t.Errorf("after the questions expired: %v", err)
	}
}

// A host a call's command wanted becomes the call's InputRequiredResult; a
// 2025 call and a call that wanted nothing pass through untouched; the
// retry with a yes leaves the answer for the command's connection.
func TestAskByInputTurnsACallIntoAQuestion(t *testing.T) {
	q := newEgressQuestions()
	modern := mcpserver.WithRequestProtocolInfo(context.Background(), &mcpserver.RequestProtocolInfo{Modern: true, ProtocolVersion: "2026-07-28"})
	ctx := context.WithValue(context.WithValue(modern, handleSessionKey{}, "s1"), principalKey{}, "alice")
	wants, put := "", false
	handler := q.askByInput(func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if wants != "" {
			if allow, ok := q.answered("s1", wants, 443); ok {
				return mcp.NewToolResultText(fmt.Sprintf("connected: %v", allow)), nil
			}
			put = q.putToCall("s1", wants, 443) == errAskedByInput
			q.putToCall("s1", "second.example", 443) // only the first is asked
		}
		return mcp.NewToolResultText("ran"), nil
	})
	req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "podman_shell", Arguments: map[string]any{"command": []any{"curl", "https://example.org"}}}}
	if res, _ := handler(ctx, req); res.NeedsInput() {
		t.Fatal("a call that wanted no host asked")
	}
	wants = "example.org"
	legacy := context.WithValue(context.WithValue(context.Background(), handleSessionKey{}, "s1"), principalKey{}, "alice")
	if res, _ := handler(legacy, req); res.NeedsInput() || put {
		t.Fatal("a 2025 call was taken for one that asks by its result")
	}
	res, err := handler(ctx, req)
	if err != nil || !put || !res.NeedsInput() || res.RequestState == "" {
		t.Fatalf("got %+v, %v; want input_required", res, err)
	}
	asked := res.InputRequests[egressInputKey]
	if asked.Elicitation == nil || !strings.Contains(asked.Elicitation.Message, "example.org on port 443") || strings.Contains(asked.Elicitation.Message, "second") {
		t.Fatalf("question %+v", asked)
	}
	if q.putToCall("s1", "late.example", 443) != nil {
		t.Error("a call that ended still takes questions")
	}
	retry := req
	retry.Params.RequestState, retry.Params.InputResponses = res.RequestState, egressAnswerOf(true)
	if res, _ := handler(ctx, retry); res.NeedsInput() || !strings.Contains(firstText(res), "connected: true") {
		t.Errorf("the retry with a yes: %+v", res)
	}
	inTask := context.WithValue(ctx, taskCallKey{}, true)
	wants = "task.example"
	if res, _ := handler(inTask, req); res.NeedsInput() || put {
		t.Errorf("a task's call asked (%+v); its connection must be refused instead", res)
	}
	forged := req
	forged.Params.RequestState, forged.Params.InputResponses = "weq_forged", egressAnswerOf(true)
	if res, _ := handler(ctx, forged); !res.IsError || !strings.Contains(firstText(res), "unknown") {
		t.Errorf("a forged state: %+v", res)
	}
}
