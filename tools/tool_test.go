package tools

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

// someArgs are valid arguments of every tool that has no path argument.
var someArgs = map[string]string{
	"job":                         `{"action":"list"}`,
	"workspace_port":              `{"action":"list"}`,
	"workspace_egress":            `{"action":"list"}`,
	"workspace_service":           `{"action":"list"}`,
	"workspace_checkpoint":        `{}`,
	"workspace_checkpoints":       `{}`,
	"workspace_restore":           `{"checkpoint":"c1"}`,
	"workspace_checkpoint_diff":   `{"from":"c1"}`,
	"workspace_checkpoint_delete": `{"checkpoints":["c1"]}`,
	"workspace_handoff":           `{}`,
	"workspace_attach":            `{"handle":"h"}`,
	"workspace_fork":              `{"count":1}`,
	"workspace_info":              `{}`,
	"workspace_digest":            `{"action":"get"}`,
	"workspace_profile":           `{"name":"p"}`,
}

// A tool on a workspace that lacks the interface it takes answers with a
// tool error naming the tool, never a panic: every tool, on a workspace
// with none of the methods, and on none at all.
func TestAToolWithoutItsInterfaceIsAToolError(t *testing.T) {
	for name, ws := range map[string]any{"a workspace without the methods": struct{}{}, "no workspace": nil} {
		all, err := All(func(context.Context) (any, error) { return ws, nil }, slog.New(slog.DiscardHandler), Options{Profiles: []Profile{{Name: "p"}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range all {
			t.Run(name+"/"+tool.Tool.Name, func(t *testing.T) {
				args, ok := someArgs[tool.Tool.Name]
				if build, withPath := pathArgs[tool.Tool.Name]; withPath {
					raw, err := json.Marshal(build("a"))
					if err != nil {
						t.Fatal(err)
					}
					args, ok = string(raw), true
				}
				if !ok {
					t.Fatalf("no arguments for %s: add some to someArgs", tool.Tool.Name)
				}
				res := call(t, tool, args)
				if !res.IsError || !strings.Contains(text(res), tool.Tool.Name+" cannot run: this server's workspace") {
					t.Errorf("got %q (isError %v), want an error naming %s", text(res), res.IsError, tool.Tool.Name)
				}
			})
		}
	}
}

// Interfaces lists the interface of every tool, so that a server can check
// its workspace against them all: each tool's error names one it lists.
func TestInterfacesListsEveryToolsInterface(t *testing.T) {
	listed := map[string]bool{}
	for _, i := range Interfaces() {
		listed[i.String()] = true
	}
	all, err := All(func(context.Context) (any, error) { return struct{}{}, nil }, slog.New(slog.DiscardHandler), Options{Profiles: []Profile{{Name: "p"}}})
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, tool := range all {
		args := someArgs[tool.Tool.Name]
		if build, withPath := pathArgs[tool.Tool.Name]; withPath {
			raw, _ := json.Marshal(build("a"))
			args = string(raw)
		}
		_, after, _ := strings.Cut(text(call(t, tool, args)), "lacks the methods of ")
		needs, _, found := strings.Cut(after, " that the tool needs")
		for _, takes := range strings.Split(needs, ", ") {
			if !found || !listed[takes] {
				t.Errorf("%s takes %q, which Interfaces does not list", tool.Tool.Name, takes)
			}
			used[takes] = true
		}
	}
	for name := range listed {
		if !used[name] {
			t.Errorf("Interfaces lists %s, which no tool takes", name)
		}
	}
}

// The message names the workspace's type and the interface the tool takes,
// so it says what is missing.
func TestTheMissingInterfaceIsNamed(t *testing.T) {
	tool, err := Ls(func(context.Context) (any, error) { return &fakeChanges{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	msg := text(call(t, tool, `{}`))
	if !strings.Contains(msg, "(*tools.fakeChanges) lacks the methods of tools.FileReader") {
		t.Errorf("message %q does not name the workspace's type and FileReader", msg)
	}
}

// fakeComposite is a workspace made of parts.
type fakeComposite []any

func (c fakeComposite) Parts() []any { return c }

// A tool on a Composite workspace takes the first part that implements its
// interface, and names the composite when none does.
func TestAToolTakesItsInterfaceFromAPart(t *testing.T) {
	first, second := &fakeFiles{}, &fakeFiles{}
	tool, err := Ls(func(context.Context) (any, error) { return fakeComposite{&fakeChanges{}, first, second}, nil })
	if err != nil {
		t.Fatal(err)
	}
	if res := call(t, tool, `{"path":"a"}`); res.IsError {
		t.Fatalf("ls on a composite with files: %s", text(res))
	}
	if len(first.calls) != 1 || len(second.calls) != 0 {
		t.Errorf("the first files part got %q and the second %q, want one call on the first", first.calls, second.calls)
	}
	tool, err = Ls(func(context.Context) (any, error) { return fakeComposite{&fakeChanges{}}, nil })
	if err != nil {
		t.Fatal(err)
	}
	if msg := text(call(t, tool, `{}`)); !strings.Contains(msg, "(tools.fakeComposite) lacks the methods of tools.FileReader") {
		t.Errorf("message %q does not name the composite and FileReader", msg)
	}
}
