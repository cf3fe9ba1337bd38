package tools

import (
	"context"
	"strings"
	"testing"
)

// TestWorkspaceProfileSaysWhatWasDetected: the description ends with
// what the server found in the host folders, and says nothing of it
// when it did not look.
func TestWorkspaceProfileSaysWhatWasDetected(t *testing.T) {
	t.Parallel()
	const found = "Found in /workspace/proj: go.mod is a Go module, so the go profile."
	none := func(context.Context) (any, error) { return nil, nil }
	tool, err := WorkspaceProfile(none, []Profile{{Name: "go", Description: "Go"}}, found)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(tool.Tool.Description, "- go: Go\n"+found) {
		t.Fatalf("description %q", tool.Tool.Description)
	}
	tool, err = WorkspaceProfile(none, []Profile{{Name: "go", Description: "Go"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(tool.Tool.Description, "Found in") {
		t.Fatalf("description %q", tool.Tool.Description)
	}
}
