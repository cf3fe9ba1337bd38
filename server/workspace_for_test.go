package server

import (
	"reflect"
	"testing"

	"github.com/wink-mcp/wink-mcp/tools"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// The session workspaceFor gives the tools implements every interface they
// take; a tool whose interface it lacked would answer every call with an
// error.
func TestSessionGivesEveryToolItsInterface(t *testing.T) {
	session := reflect.TypeFor[*workspace.Session]()
	for _, i := range tools.Interfaces() {
		if !session.Implements(i) {
			t.Errorf("%s does not implement %s", session, i)
		}
	}
	if len(tools.Interfaces()) == 0 {
		t.Error("tools.Interfaces lists nothing")
	}
}
