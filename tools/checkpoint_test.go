package tools

import (
	"strings"
	"testing"
)

func TestCheckpointAndHandoffArguments(t *testing.T) {
	tests := []struct {
		tool     string
		args     map[string]any
		wantErr  string
		wantCall string
	}{
		{tool: "workspace_checkpoint", args: map[string]any{"message": strings.Repeat("m", 500)}, wantCall: "checkpoint " + strings.Repeat("m", 500)},
		{tool: "workspace_checkpoint", args: map[string]any{"message": strings.Repeat("m", 501)}, wantErr: "message: must be at most 500 characters"},
		{tool: "workspace_checkpoint", args: map[string]any{"mesage": "x"}, wantErr: "mesage"},
		{tool: "workspace_checkpoints", args: map[string]any{}, wantCall: "checkpoints"},
		{tool: "workspace_restore", args: map[string]any{"checkpoint": "c12"}, wantCall: "restore c12"},
		{tool: "workspace_restore", args: map[string]any{}, wantErr: "checkpoint: is required"},
		{tool: "workspace_restore", args: map[string]any{"checkpoint": "c0"}, wantErr: "checkpoint: must be a checkpoint id such as c1"},
		{tool: "workspace_restore", args: map[string]any{"checkpoint": "../c1"}, wantErr: "checkpoint: must be a checkpoint id such as c1"},
		{tool: "workspace_restore", args: map[string]any{"checkpoint": 3}, wantErr: "checkpoint"},
		{tool: "workspace_checkpoint_diff", args: map[string]any{"from": "c1"}, wantCall: "checkpoint diff c1 now "},
		{tool: "workspace_checkpoint_diff", args: map[string]any{"from": "c1", "to": "c2", "path": "./src/"}, wantCall: "checkpoint diff c1 c2 src"},
		{tool: "workspace_checkpoint_diff", args: map[string]any{"from": "c1", "to": "yesterday"}, wantErr: `to: must be a checkpoint id such as c2, or now (got "yesterday")`},
		{tool: "workspace_checkpoint_diff", args: map[string]any{"from": "c1", "path": "../x"}, wantErr: "path:"},
		{tool: "workspace_checkpoint_diff", args: map[string]any{"from": "c1", "limit": 2001}, wantErr: "limit: must be at most 2000"},
		{tool: "workspace_checkpoint_delete", args: map[string]any{"checkpoints": []string{}}, wantErr: "checkpoints: must have at least 1"},
		{tool: "workspace_checkpoint_delete", args: map[string]any{"checkpoints": []string{"c1", "x"}}, wantErr: `checkpoints[1]: must be a checkpoint id such as c1 (got "x")`},
		{tool: "workspace_checkpoint_delete", args: map[string]any{"checkpoints": []string{"c1", "c2"}}, wantCall: "delete checkpoints [c1 c2]"},
		{tool: "workspace_handoff", args: map[string]any{}, wantCall: "handoff 15m0s"},
		{tool: "workspace_handoff", args: map[string]any{"expires_in_seconds": 60}, wantCall: "handoff 1m0s"},
		{tool: "workspace_handoff", args: map[string]any{"expires_in_seconds": 0}, wantErr: "expires_in_seconds: must be at least 1"},
		{tool: "workspace_handoff", args: map[string]any{"expires_in_seconds": 86401}, wantErr: "expires_in_seconds: must be at most 86400"},
		{tool: "workspace_attach", args: map[string]any{"handle": "short"}, wantCall: "attach short"},
		{tool: "workspace_attach", args: map[string]any{"handle": strings.Repeat("a", 201)}, wantErr: "handle: must be at most 200"},
	}
	for _, tt := range tests {
		t.Run(tt.tool+"/"+tt.wantErr, func(t *testing.T) {
			ws := &struct {
				fakeCheckpoints
				fakeHandoffs
			}{}
			msg, isErr := callArgs(t, toolsOn(t, ws)[tt.tool], tt.args)
			if tt.wantErr != "" {
				if !isErr || !strings.Contains(msg, tt.wantErr) {
					t.Errorf("got %q (isError %v), want an error containing %q", msg, isErr, tt.wantErr)
				}
				return
			}
			if isErr {
				t.Fatalf("rejected: %s", msg)
			}
			calls := append(ws.fakeCheckpoints.calls, ws.fakeHandoffs.calls...)
			if len(calls) != 1 || calls[0] != tt.wantCall {
				t.Errorf("calls = %q, want %q", calls, tt.wantCall)
			}
		})
	}
}
