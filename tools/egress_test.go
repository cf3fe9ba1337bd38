package tools

import (
	"context"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/egress"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// fakeEgress records what workspace_egress asks of a workspace.
type fakeEgress struct{ calls []string }

func (f *fakeEgress) EgressReport() workspace.EgressReport {
	f.calls = append(f.calls, "list")
	return workspace.EgressReport{On: true, Grants: []egress.Grant{{Pattern: "a.example.com", Source: "the server's --egress"}}}
}

func (f *fakeEgress) DropEgress(p string) (workspace.EgressReport, error) {
	f.calls = append(f.calls, "drop "+p)
	return workspace.EgressReport{On: true, Cut: 2, Grants: []egress.Grant{{Pattern: p, Source: "s", Dropped: true}}}, nil
}

func (f *fakeEgress) LockEgress() (workspace.EgressReport, error) {
	f.calls = append(f.calls, "lock")
	return workspace.EgressReport{On: true, Locked: true}, nil
}

// Whatever shape an attempt to add a host takes, it gets the one refusal
// that says the tool never adds, and reaches no method of the workspace.
func TestWorkspaceEgressNeverAdds(t *testing.T) {
	ws := &fakeEgress{}
	tool, err := WorkspaceEgress(func(context.Context) (any, error) { return ws, nil })
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range []string{
		`{"action":"add","pattern":"evil.example.com"}`,
		`{"action":"allow","pattern":"evil.example.com"}`,
		`{"action":"unlock"}`,
		`{"action":"ADD","pattern":"x"}`,
		`{"action":"drop","pattern":"a.example.com","add":"evil.example.com"}`,
		`{"action":"list","hosts":["evil.example.com"]}`,
		`{"add":"evil.example.com"}`,
		`{"action":["add"],"pattern":"x"}`,
		`{"action":"list","allow":true}`,
	} {
		res := call(t, tool, args)
		if !res.IsError || !strings.Contains(text(res), "it never adds or re-allows a host, which is the user's decision") {
			t.Errorf("%s: got %q (isError %v)", args, text(res), res.IsError)
		}
	}
	if len(ws.calls) != 0 {
		t.Fatalf("refused calls reached the workspace: %v", ws.calls)
	}
	for args, want := range map[string]string{
		`{"action":"list"}`:                           "a.example.com  (from the server's --egress)",
		`{"action":"drop","pattern":"a.example.com"}`: "2 open connection(s) cut",
		`{"action":"lock"}`:                           "egress is locked for the rest of this session",
		`{"action":"drop"}`:                           "pattern: is required when action is drop",
		`{"action":"lock","pattern":"a.example.com"}`: "pattern: lock takes no pattern",
	} {
		if got := text(call(t, tool, args)); !strings.Contains(got, want) {
			t.Errorf("%s: got %q, want %q in it", args, got, want)
		}
	}
}
