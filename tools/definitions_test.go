package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/wspath"
)

var update = flag.Bool("update", false, "rewrite testdata/tools.json and the tool table and reference of docs/tools.md")

const snapshotPath = "testdata/tools.json"

func allTools(t *testing.T) []server.ServerTool {
	t.Helper()
	all, err := All(func(context.Context) (any, error) { return nil, nil }, slog.New(slog.DiscardHandler),
		Options{Profiles: []Profile{{Name: "python", Description: "Python 3 with pytest"}, {Name: "go", Description: "Go from Debian"}}})
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// TestToolDefinitionsSnapshot pins what clients see of every tool: names,
// descriptions, schemas and annotations. A change shows up in review as a
// diff of testdata/tools.json.
func TestToolDefinitionsSnapshot(t *testing.T) {
	var defs []json.RawMessage
	for _, tool := range allTools(t) {
		b, err := json.Marshal(tool.Tool)
		if err != nil {
			t.Fatal(err)
		}
		defs = append(defs, b)
	}
	got, err := json.MarshalIndent(defs, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(snapshotPath, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(snapshotPath)
	if err != nil {
		t.Fatalf("%v (run go test ./tools -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("tool definitions changed; review and run `go test -tags '...' ./tools -update`:\n%s", got)
	}
}

// pathFields are the argument names that hold workspace paths.
var pathFields = map[string]bool{"cwd": true, "path": true, "file_path": true}

var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// TestEveryToolIsWellFormed checks what some clients and model providers
// reject or misuse.
func TestEveryToolIsWellFormed(t *testing.T) {
	for _, tool := range allTools(t) {
		t.Run(tool.Tool.Name, func(t *testing.T) {
			def := tool.Tool
			if !snakeCase.MatchString(def.Name) {
				t.Errorf("name %q is not snake_case", def.Name)
			}
			if len(def.Description) < 80 || def.Title == "" {
				t.Errorf("description (%d chars) or title %q too thin", len(def.Description), def.Title)
			}
			a := def.Annotations
			if a.ReadOnlyHint == nil || a.DestructiveHint == nil || a.IdempotentHint == nil || a.OpenWorldHint == nil {
				t.Errorf("annotations not all set on purpose: %+v", a)
			}
			if a.OpenWorldHint != nil && *a.OpenWorldHint {
				t.Error("openWorldHint is true; no tool reaches outside the sandbox")
			}
			if a.ReadOnlyHint != nil && a.DestructiveHint != nil && *a.ReadOnlyHint && *a.DestructiveHint {
				t.Error("a tool cannot be both read-only and destructive")
			}
			for name, raw := range map[string]json.RawMessage{"input": def.RawInputSchema, "output": def.RawOutputSchema} {
				var s map[string]any
				if err := json.Unmarshal(raw, &s); err != nil {
					t.Fatalf("%s schema: %v", name, err)
				}
				if s["type"] != "object" {
					t.Errorf("%s schema type = %v, want object", name, s["type"])
				}
				for _, banned := range []string{"anyOf", "oneOf", "allOf", "$ref", "$defs", "not"} {
					if _, ok := s[banned]; ok {
						t.Errorf("%s schema has top-level %s", name, banned)
					}
				}
				props, _ := s["properties"].(map[string]any)
				for prop, v := range props {
					field := v.(map[string]any)
					if d, _ := field["description"].(string); d == "" {
						t.Errorf("%s schema property %s has no description", name, prop)
					}
					// Struct tags cannot name a constant: keep path limits equal to the path rules.
					if name == "input" && pathFields[prop] && field["maxLength"] != float64(wspath.MaxLength) {
						t.Errorf("path field %s has maxLength %v, want %d", prop, field["maxLength"], wspath.MaxLength)
					}
				}
			}
			var in map[string]any
			_ = json.Unmarshal(def.RawInputSchema, &in)
			if in["additionalProperties"] != false {
				t.Error("input schema allows unknown fields")
			}
		})
	}
}

// TestEveryToolHasAnIcon checks that each tool carries a small SVG icon.
func TestEveryToolHasAnIcon(t *testing.T) {
	for _, tool := range allTools(t) {
		icons := tool.Tool.Icons
		if len(icons) != 1 || icons[0].MIMEType != "image/svg+xml" || !strings.HasPrefix(icons[0].Src, "data:image/svg+xml;base64,") || len(icons[0].Src) > 2048 {
			t.Errorf("%s: icons %v, want one small SVG data URI", tool.Tool.Name, icons)
		}
	}
}
