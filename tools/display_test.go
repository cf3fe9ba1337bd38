package tools

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/workspace"
)

// hostile is text a model can put in a name, a message or a command to
// forge a line of a listing or rewrite a terminal: a newline and a
// carriage return, ANSI escapes (ESC and the C1 CSI), a bidi override, a
// zero-width space and an invalid byte.
const hostile = "x\n  c9    2026-01-01T00:00:00Z  forged\r\x1b[2K\x1b[31mred\u009b2J\u202eevil\u200b\xff"

// Every tool result's text shows the model-written text it carries (names,
// messages, commands, paths it found) quoted, on its own line, with no
// escape left raw; the structured content keeps the exact value. The table
// walks every tool All returns: one with no such text says why.
func TestTextsShowModelWrittenTextSafely(t *testing.T) {
	t.Parallel()
	results := map[string]struct {
		result Result
		none   string // why the result carries no model-written text besides contents
	}{
		"ls": {result: LsResult{Total: 3, Entries: []workspace.Entry{{Name: hostile, Kind: workspace.KindFile},
			{Name: hostile, Kind: workspace.KindDirectory}, {Name: hostile, Kind: workspace.KindSymlink, LinkTarget: hostile}}}},
		"glob":                  {result: GlobResult{Matches: []workspace.GlobMatch{{Path: hostile}}}},
		"grep":                  {result: GrepResult{Matches: []workspace.GrepMatch{{Path: hostile, LineNumber: 1, Line: "a line of the file"}}}},
		"job":                   {result: JobResult{Action: JobList, Jobs: []JobView{{ID: "j1", Kind: "job", Command: []string{"sh", "-c", hostile}, State: "running"}}}},
		"workspace_changes":     {result: WorkspaceChangesResult{Mounts: []MountView{{}}, Total: 1, Changes: []ChangeView{{Path: hostile, Status: "created", Kind: "file"}}}},
		"workspace_checkpoint":  {result: WorkspaceCheckpointResult{Checkpoint: CheckpointView{ID: "c1", Message: hostile, Skipped: []string{hostile}}}},
		"workspace_checkpoints": {result: WorkspaceCheckpointsResult{Checkpoints: []CheckpointView{{ID: "c1", Message: hostile}, {ID: "c2", Message: "fine"}}}},
		"workspace_info": {result: WorkspaceInfoResult{RunningJobs: []JobView{{ID: "j1", Kind: "job", Command: []string{"sh", "-c", hostile}, State: "running"}},
			LatestCheckpoint: &CheckpointView{ID: "c1", Message: hostile}}},
		"read_file":                   {none: "its path is the validated argument; the lines are the file's content, shown as the file holds them"},
		"write_file":                  {none: "its path is the validated argument"},
		"edit_file":                   {none: "its path is the validated argument"},
		"rm":                          {none: "its path is the validated argument"},
		"podman_shell":                {none: "its cwd is validated; stdout and stderr are the command's output, shown as it wrote them"},
		"evaluate_python":             {none: "its write paths are validated arguments; the output is the program's"},
		"workspace_diff":              {none: "the patch quotes names the way git does"},
		"workspace_checkpoint_diff":   {none: "the patch quotes names the way git does"},
		"workspace_port":              {none: "ports and URLs only"},
		"workspace_egress":            {none: "patterns from the server, its profiles and the user's answers; a dropped pattern the model named is quoted"},
		"workspace_service":           {none: "names checked against the name rules, profiles from the server's profiles file; logs are the service's output, shown as it wrote them"},
		"workspace_restore":           {none: "ids and counts only"},
		"workspace_checkpoint_delete": {none: "ids the schema checked"},
		"workspace_handoff":           {none: "a handle and a workspace name the server made"},
		"workspace_attach":            {none: "a workspace name checked against the name rules"},
		"workspace_fork":              {none: "handles and workspace names the server made"},
		"workspace_profile":           {none: "names and images from the server's profiles file"},
		"workspace_digest":            {none: "the digest is a document, shown as saved: digest.Check refuses control characters (but newlines and tabs) and bidi overrides in it; its repository name is cleaned the same way"},
	}
	all, err := All(func(context.Context) (any, error) { return nil, nil }, slog.New(slog.DiscardHandler), Options{Profiles: []Profile{{Name: "p"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range all {
		c, ok := results[tool.Tool.Name]
		if !ok {
			t.Errorf("%s: not in the table; say what model-written text its result shows", tool.Tool.Name)
			continue
		}
		if c.result == nil {
			continue
		}
		t.Run(tool.Tool.Name, func(t *testing.T) {
			text := c.result.Text()
			if strings.ContainsAny(text, "\r\x1b\u009b\u202e\u200b") || strings.Contains(text, "\n  c9") || !strings.Contains(text, `\u202e`) {
				t.Errorf("the text shows model-written text raw:\n%s", text)
			}
			structured, _ := json.Marshal(c.result)
			if !strings.Contains(string(structured), `\u001b[31mred`) {
				t.Errorf("the structured content lost the exact value: %s", structured)
			}
		})
	}
}
