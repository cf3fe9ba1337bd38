package workspace

import (
	"context"
	"testing"

	"github.com/wink-mcp/wink-mcp/engine"
)

// TestCloseRemovesContainersLeftForAdoption: a server that closes while
// containers it left for another server wait to be adopted removes those
// still labelled as its own session's, and leaves the one another server
// adopted (relabelled) alone, so a server that ends leaves nothing behind
// for a workspace nobody took.
func TestCloseRemovesContainersLeftForAdoption(t *testing.T) {
	m, eng, _ := newTestManager(t, nil)
	eng.mu.Lock()
	for _, name := range []string{"left-unadopted", "left-adopted"} {
		eng.containers[name] = &fakeContainer{spec: engine.Spec{Name: name}}
	}
	eng.listed = []engine.Listed{
		{Name: "left-unadopted", Labels: map[string]string{LabelManaged: "true", LabelInstance: m.inst.id, LabelSession: "key-a"}},
		{Name: "left-adopted", Labels: map[string]string{LabelManaged: "true", LabelInstance: "another-server", LabelSession: "key-elsewhere"}},
	}
	eng.mu.Unlock()
	m.leftForAdoption.add(m, "left-unadopted", "key-a", unadoptedWait, false)
	m.leftForAdoption.add(m, "left-adopted", "key-b", unadoptedWait, false)

	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	eng.mu.Lock()
	defer eng.mu.Unlock()
	if _, ok := eng.containers["left-unadopted"]; ok {
		t.Error("the container nobody adopted is still there after Close")
	}
	if _, ok := eng.containers["left-adopted"]; !ok {
		t.Error("Close removed the container another server adopted")
	}
	if m.leftForAdoption.forget("left-unadopted") {
		t.Error("a removed container is still recorded as left")
	}
}
