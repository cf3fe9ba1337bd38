package workspace

import (
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/profiles/detect"
)

func TestDetectionSentence(t *testing.T) {
	t.Parallel()
	found := detect.Finding{Profile: "go", Marker: "go.mod", Reason: "go.mod is a Go module, so the go profile"}
	for _, tt := range []struct {
		d    Detection
		want string
	}{
		{Detection{Folder: "/workspace/p", Finding: found}, "Found in /workspace/p: go.mod is a Go module, so the go profile. Switch to it with `workspace_profile` (name `go`)"},
		{Detection{Folder: "/workspace/p", Finding: found, Started: true}, "The workspace starts in the `go` profile, found in /workspace/p: go.mod is a Go module"},
		{Detection{Folder: "/workspace/p", Finding: detect.Finding{Reason: "none of go.mod is at the top of the folder"}}, "No toolchain was recognised in /workspace/p: none of go.mod"},
	} {
		if got := tt.d.Sentence(); !strings.HasPrefix(got, tt.want) {
			t.Errorf("Sentence() = %q, want it to start %q", got, tt.want)
		}
	}
}
