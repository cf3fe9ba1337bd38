package server

import (
	"reflect"
	"testing"

	"github.com/wink-mcp/wink-mcp/tools"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// The session workspaceFor gives the tools implements, in one of its
// parts, every interface they take; a tool whose interface no part had
// would answer every call with an error.
func TestSessionGivesEveryToolItsInterface(t *testing.T) {
	parts := (&workspace.Session{}).Parts()
	for _, i := range tools.Interfaces() {
		found := false
		for _, p := range parts {
			if reflect.TypeOf(p).Implements(i) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("no part of a workspace.Session implements %s", i)
		}
	}
	if len(tools.Interfaces()) == 0 {
		t.Error("tools.Interfaces lists nothing")
	}
	if len(parts) == 0 {
		t.Error("a workspace.Session has no parts")
	}
}

// sessionPart returns the part of ws that implements W, as a tool takes
// it (tools.PartOf), failing the test when none does.
func sessionPart[W any](t *testing.T, ws *workspace.Session) W {
	t.Helper()
	w, ok := tools.PartOf[W](ws)
	if !ok {
		t.Fatalf("no part of the session implements %T", &w)
	}
	return w
}
