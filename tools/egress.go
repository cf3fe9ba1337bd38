package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/workspace"
)

// workspace_egress's actions.
const (
	EgressList = "list"
	EgressDrop = "drop"
	EgressLock = "lock"
)

// egressActions are the only actions workspace_egress has: none adds.
var egressActions = []string{EgressList, EgressDrop, EgressLock}

// WorkspaceEgressParams are workspace_egress's arguments.
type WorkspaceEgressParams struct {
	Action  string `json:"action" jsonschema:"enum=list,enum=drop,enum=lock" jsonschema_description:"list names what the workspace may reach; drop takes one pattern away for the rest of the session; lock takes all network access away for the rest of the session."`
	Pattern string `json:"pattern,omitempty" jsonschema:"maxLength=300" jsonschema_description:"The pattern to drop, exactly as list names it. Required for drop."`
}

// Validate requires a pattern for drop, and none otherwise.
func (p *WorkspaceEgressParams) Validate() error {
	if p.Action == EgressDrop && strings.TrimSpace(p.Pattern) == "" {
		return fmt.Errorf("pattern: is required when action is drop (a pattern exactly as action list names it)")
	}
	if p.Action != EgressDrop && p.Pattern != "" {
		return fmt.Errorf("pattern: %s takes no pattern (got %q); only drop does", p.Action, p.Pattern)
	}
	return nil
}

// EgressGrantView is one pattern the workspace may reach through.
type EgressGrantView struct {
	Pattern string `json:"pattern" jsonschema_description:"A host, *.domain or address, with :port when it names one."`
	Source  string `json:"source" jsonschema_description:"Who allowed it: the server's --egress, a profile, or the user when asked."`
	Dropped bool   `json:"dropped,omitempty" jsonschema_description:"Dropped for the rest of the session: it no longer allows anything."`
}

// WorkspaceEgressResult is workspace_egress's result.
type WorkspaceEgressResult struct {
	Action  string            `json:"action" jsonschema_description:"The action performed."`
	Network bool              `json:"network" jsonschema_description:"The workspace has egress at all (the server was started with some)."`
	Locked  bool              `json:"locked" jsonschema_description:"Egress is locked for the rest of the session: nothing is reachable."`
	Ask     bool              `json:"ask" jsonschema_description:"The user is asked about a host no pattern allows (until a lock)."`
	Cut     int               `json:"cut" jsonschema_description:"Open connections this call cut."`
	Grants  []EgressGrantView `json:"patterns" jsonschema_description:"Every pattern, dropped ones included, after the action."`
}

// Text says what the workspace may reach after the action.
func (r WorkspaceEgressResult) Text() string {
	var b strings.Builder
	switch {
	case !r.Network:
		b.WriteString("the workspace has no network at all (the server allows no egress)")
	case r.Locked:
		b.WriteString("egress is locked for the rest of this session: the workspace reaches no host")
	default:
		b.WriteString("the workspace may reach, through its proxy:")
		any := false
		for _, g := range r.Grants {
			if !g.Dropped {
				fmt.Fprintf(&b, "\n%s  (from %s)", g.Pattern, g.Source)
				any = true
			}
		}
		if !any {
			b.WriteString("\nno pattern")
		}
		if r.Ask {
			b.WriteString("\nand hosts the user allows when asked")
		}
	}
	for _, g := range r.Grants {
		if g.Dropped {
			fmt.Fprintf(&b, "\ndropped: %s  (from %s)", g.Pattern, g.Source)
		}
	}
	if r.Cut > 0 {
		fmt.Fprintf(&b, "\n%d open connection(s) cut", r.Cut)
	}
	return b.String()
}

// EgressPolicy is what workspace_egress takes of a session's workspace.
type EgressPolicy interface {
	// EgressReport lists what the session may reach.
	EgressReport() workspace.EgressReport
	// DropEgress drops a pattern for the rest of the session.
	DropEgress(pattern string) (workspace.EgressReport, error)
	// LockEgress takes all egress away for the rest of the session.
	LockEgress() (workspace.EgressReport, error)
}

// refuseAdding answers, before the schema's checks, any call that is not
// one of workspace_egress's actions with the one fact the model needs:
// the tool never adds a host, whatever the arguments look like.
func refuseAdding(raw json.RawMessage) error {
	var args map[string]any
	if err := json.Unmarshal(raw, &args); err != nil || args == nil {
		return nil // the schema's checks say what is wrong
	}
	action, _ := args["action"].(string)
	extra := []string{}
	for k := range args {
		if k != "action" && k != "pattern" {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	if slices.Contains(egressActions, action) && len(extra) == 0 {
		return nil
	}
	got := fmt.Sprintf("action %q", action)
	if len(extra) > 0 {
		got += fmt.Sprintf(" with %s", strings.Join(extra, ", "))
	}
	return fmt.Errorf("workspace_egress refused %s: it only lists (list), drops (drop) and locks (lock) the workspace's egress; "+
		"it never adds or re-allows a host, which is the user's decision: the server's --egress, a profile, or the user's yes "+
		"when asked (--egress-ask). Tell the user which host you need and why", got)
}

// WorkspaceEgress returns the workspace_egress tool.
func WorkspaceEgress(workspaceFor WorkspaceFor) (server.ServerTool, error) {
	return build(workspaceFor, definition[EgressPolicy, WorkspaceEgressParams, WorkspaceEgressResult]{
		name:  "workspace_egress",
		title: "List or narrow the workspace's network access",
		description: "List what the workspace may reach through its egress proxy (each pattern and who allowed it), or take access away " +
			"for the rest of the session: drop removes one pattern, lock removes all (for example: install the dependencies, then lock). " +
			"Either cuts the open connections it no longer allows, and nothing undoes it: in a kept workspace it also holds for every later session " +
			"on it (a restart, an attach, a handoff, its forks). This tool never adds a host: " +
			"that is the user's decision.",
		annotations: annotate(false, true, true),
		screen:      refuseAdding,
		handle: func(_ context.Context, ws EgressPolicy, p WorkspaceEgressParams) (WorkspaceEgressResult, error) {
			var rep workspace.EgressReport
			var err error
			switch p.Action {
			case EgressDrop:
				rep, err = ws.DropEgress(p.Pattern)
			case EgressLock:
				rep, err = ws.LockEgress()
			default:
				rep = ws.EgressReport()
			}
			if err != nil {
				return WorkspaceEgressResult{}, err
			}
			r := WorkspaceEgressResult{Action: p.Action, Network: rep.On, Locked: rep.Locked, Ask: rep.Ask && !rep.Locked, Cut: rep.Cut,
				Grants: []EgressGrantView{}}
			for _, g := range rep.Grants {
				r.Grants = append(r.Grants, EgressGrantView{Pattern: g.Pattern, Source: g.Source, Dropped: g.Dropped})
			}
			return r, nil
		},
	})
}
