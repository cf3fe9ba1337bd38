package tools

import (
	"context"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"
)

func newJobTool(t *testing.T, ws *fakeJobs) server.ServerTool {
	t.Helper()
	tool, err := Job(func(context.Context) (any, error) { return ws, nil })
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

func TestJobArgumentErrors(t *testing.T) {
	for _, tt := range []struct{ args, wantErr string }{
		{`{}`, "action"},
		{`{"action":"wait"}`, "action"},
		{`{"action":"status"}`, "id: is required when action is status"},
		{`{"action":"status","id":"  "}`, "id: is required"},
		{`{"action":"list","id":"a-1"}`, "id: list takes no id"},
		{`{"action":"status","id":"a-1","offset":3}`, "offset: only for action output"},
		{`{"action":"output","id":"a-1","offset":-1}`, "offset: must be at least 0"},
		{`{"action":"output","id":"a-1","limit":0}`, "limit"},
		{`{"action":"output","id":"a-1","limit":1048577}`, "limit: must be at most 1048576"},
		{`{"action":"output","id":"a-1","offset":5,"line":2}`, "give one of them, not both"},
		{`{"action":"output","id":"a-1","stream":"stdin"}`, "stream"},
		{`{"action":"output","id":"a-1","encoding":"hex"}`, "encoding"},
		{`{"action":"signal","id":"a-1"}`, "signal: is required when action is signal"},
		{`{"action":"signal","id":"a-1","signal":"STOP"}`, "signal"},
		{`{"action":"signal","id":"a-1","signal":"KILL","grace_seconds":3}`, "grace_seconds: only with signal TERM"},
		{`{"action":"signal","id":"a-1","signal":"TERM","grace_seconds":31}`, "grace_seconds: must be at most 30"},
		{`{"action":"input","id":"a-1"}`, "input: is required when action is input"},
		{`{"action":"input","id":"a-1","input":"x","signal":"TERM"}`, "signal: only for action signal"},
		{`{"action":"status","id":"` + strings.Repeat("a", 65) + `"}`, "id"},
	} {
		ws := &fakeJobs{}
		res := call(t, newJobTool(t, ws), tt.args)
		if !res.IsError || !strings.Contains(text(res), tt.wantErr) {
			t.Errorf("%s: got %q (isError %v), want an error containing %q", tt.args, text(res), res.IsError, tt.wantErr)
		}
		if len(ws.calls) != 0 {
			t.Errorf("%s: a rejected call reached the workspace: %v", tt.args, ws.calls)
		}
	}
}

func TestJobActionsReachTheWorkspace(t *testing.T) {
	ws := &fakeJobs{}
	for args, want := range map[string]string{
		`{"action":"list"}`:              "list",
		`{"action":"status","id":"a-1"}`: "status a-1",
		`{"action":"output","id":"a-1","stream":"stderr","offset":10}`:     "output a-1 stderr 10 0 32768",
		`{"action":"output","id":"a-1","line":4,"limit":5}`:                "output a-1 stdout 0 4 5",
		`{"action":"signal","id":"a-1","signal":"TERM"}`:                   "signal a-1 TERM 2s",
		`{"action":"signal","id":"a-1","signal":"TERM","grace_seconds":0}`: "signal a-1 TERM 0s",
		`{"action":"signal","id":"a-1","signal":"INT"}`:                    "signal a-1 INT 0s",
		`{"action":"input","id":"a-1","close_stdin":true}`:                 `input a-1 "" true`,
	} {
		ws.calls = nil
		if res := call(t, newJobTool(t, ws), args); res.IsError || len(ws.calls) != 1 || ws.calls[0] != want {
			t.Errorf("%s: %q (isError %v), calls %v, want %q", args, text(res), res.IsError, ws.calls, want)
		}
	}
}
