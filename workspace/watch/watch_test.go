package watch

import (
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/wire"
)

// TestListableFoldsBadNames: a change whose path breaks the path rules is
// reported as its nearest good directory's, never under its own name.
func TestListableFoldsBadNames(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"ok/file.txt":                     "ok/file.txt",
		"../../etc/passwd":                "",
		"src/" + strings.Repeat("x", 300): "src",
		"/abs/path":                       "",
		"a/./b":                           "a",
	} {
		got := listable(wire.Change{Path: in, SizeBytes: 3, Seq: 1})
		if got.Path != want || (got.Path != in && got.Folded != 1) {
			t.Errorf("listable(%.40q) = %+v, want the path %q", in, got, want)
		}
	}
}
