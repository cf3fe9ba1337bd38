package tools

import (
	"fmt"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/changes"
	"github.com/wink-mcp/wink-mcp/workspace"
)

func TestWorkspaceChangesListsAndCaps(t *testing.T) {
	ws := &fakeChanges{mounts: []workspace.MountInfo{{HostPath: "/home/u/proj", Path: "proj", Mode: workspace.MountOverlay}}}
	for i := range maxChangesListed + 5 {
		ws.changes = append(ws.changes, workspace.FolderChange{Path: fmt.Sprintf("proj/f%d", i), Status: changes.Created, Kind: changes.KindFile, Size: 3})
	}
	out, isErr := callArgs(t, toolsOn(t, ws)["workspace_changes"], map[string]any{"path": "proj/"})
	if isErr {
		t.Fatal(out)
	}
	if !strings.Contains(out, fmt.Sprintf("%d changed paths", maxChangesListed+5)) || !strings.Contains(out, "first 2000 shown; narrow with path") {
		t.Errorf("the cap is not stated:\n%.300s", out)
	}
	if ws.calls[0] != "changes proj" {
		t.Errorf("the path reached the workspace as %q, want it normalised to %q", ws.calls[0], "changes proj")
	}
	if out, _ := callArgs(t, toolsOn(t, &fakeChanges{})["workspace_changes"], nil); !strings.Contains(out, "no host folder is mounted") {
		t.Errorf("with no mounts: %s", out)
	}
}

func TestWorkspaceDiffPages(t *testing.T) {
	long := strings.Repeat("x", 2500)
	text := "diff --git a/p/f b/p/f\n--- a/p/f\n+++ b/p/f\n@@ -1 +1 @@\n-old\n+" + long + "\n"
	for _, tc := range []struct {
		name          string
		offset, limit int
		capped        bool
		wantLines     int
		wantTruncated bool
		wantInText    string
		wantNotInText string
	}{
		{name: "all", wantLines: 6, wantTruncated: true, wantInText: "[line cut at 2000 of 2501 characters]"},
		{name: "first page", limit: 2, wantLines: 2, wantTruncated: true, wantInText: "(read more with offset 2)", wantNotInText: "@@"},
		{name: "last page", offset: 3, limit: 2, wantLines: 2, wantTruncated: true, wantInText: "-old"},
		{name: "past the end", offset: 50, wantLines: 0, wantTruncated: false},
		{name: "capped", limit: 1, capped: true, wantLines: 1, wantTruncated: true, wantInText: "passed 16 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := pageOfDiff(workspace.DiffResult{Text: text, Truncated: tc.capped}, tc.offset, max(tc.limit, 2000*boolInt(tc.limit == 0)))
			if r.Limit != tc.wantLines || r.TotalLines != 6 || r.Truncated != tc.wantTruncated || r.Capped != tc.capped {
				t.Errorf("limit %d total %d truncated %v capped %v", r.Limit, r.TotalLines, r.Truncated, r.Capped)
			}
			if !strings.Contains(r.Text(), tc.wantInText) || (tc.wantNotInText != "" && strings.Contains(r.Diff, tc.wantNotInText)) {
				t.Errorf("text:\n%.400s", r.Text())
			}
		})
	}
	if got := (WorkspaceDiffResult{}).Text(); got != "no changes to the mounted host folders" {
		t.Errorf("empty diff: %q", got)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
