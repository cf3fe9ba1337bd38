package prompts

import (
	"strings"
	"testing"
)

// TestPromptSaysWhatWasDetected: the sentence of what the host folders
// ask for is in the profiles' list, unless the user chose a profile for
// the task.
func TestPromptSaysWhatWasDetected(t *testing.T) {
	t.Parallel()
	const found = "Found in /workspace/proj: go.mod is a Go module, so the go profile."
	info := Info{Workspace: "/workspace", Profiles: []Profile{{Name: "go", Description: "Go"}}, Detected: found}
	if text := Text(info); !strings.Contains(text, "  "+found+"\n") {
		t.Fatalf("the prompt does not say what was found:\n%s", text)
	}
	info.Chosen = "go"
	if text := Text(info); strings.Contains(text, found) {
		t.Fatalf("the user's choice and the finding both:\n%s", text)
	}
}
