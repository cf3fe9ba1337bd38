package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/tools"
)

// TestReliabilityEgressNarrowingOutlivesTheServer: a model drops a host
// and locks the egress of a kept workspace, then tries every way back
// that does not ask the user: its server killed with SIGKILL and started
// again on the workspace, a handoff (the giver's fresh workspace, and the
// handed-over one attached by another process), and a fork made between
// the drop and the lock, claimed by another process. Each way keeps what
// was taken; the fork keeps the drop, and only the drop.
func TestReliabilityEgressNarrowingOutlivesTheServer(t *testing.T) {
	dropped, other := httpServerOnLoopback(t, "reached-dropped"), httpServerOnLoopback(t, "reached-other")
	cache := t.TempDir()
	egress := []string{"--warm", "0", "--egress", "localhost:" + dropped, "--egress", "localhost:" + other}
	kept := append([]string{"--workspace", "narrowed"}, egress...)
	fetch := func(p *proc, port string) string {
		return rawProxy(t, p, "GET http://localhost:"+port+"/ HTTP/1.1\r\nHost: localhost:"+port+"\r\nConnection: close\r\n\r\n")
	}
	tried, broken := 0, 0
	refused := func(p *proc, port, how string) {
		t.Helper()
		tried++
		if out := fetch(p, port); !strings.Contains(out, "403 Forbidden") || !strings.Contains(out, "workspace_egress") || strings.Contains(out, "reached-") {
			broken++
			t.Errorf("%s: localhost:%s answered %q, want the narrowing's refusal", how, port, out)
		}
	}

	a := start(t, startOptions{cache: cache, image: pythonImage, args: kept})
	for _, port := range []string{dropped, other} {
		if out := fetch(a, port); !strings.Contains(out, "reached-") {
			t.Fatalf("before any narrowing, localhost:%s: %q", port, out)
		}
	}
	if res := a.call("workspace_egress", map[string]any{"action": "drop", "pattern": "localhost:" + dropped}); res.IsError {
		t.Fatalf("drop: %s", textOf(res))
	}
	fork := forkOf(t, a, map[string]any{"count": 1})
	if res := a.call("workspace_egress", map[string]any{"action": "lock"}); res.IsError {
		t.Fatalf("lock: %s", textOf(res))
	}
	refused(a, other, "after the lock")
	// The server dies without a word; the next one opens the workspace.
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	a.waitExit(20 * time.Second)

	b := start(t, startOptions{cache: cache, image: pythonImage, args: kept})
	if list := b.call("workspace_egress", map[string]any{"action": "list"}); !strings.Contains(textOf(list), "egress is locked") {
		t.Errorf("workspace_egress list after the restart: %s", textOf(list))
	}
	refused(b, dropped, "the dropped host after a SIGKILL and a restart")
	refused(b, other, "the other host after a SIGKILL and a restart")
	var h tools.WorkspaceHandoffResult
	decodeStructured(t, b.call("workspace_handoff", nil), &h)
	refused(b, other, "the giver's fresh workspace after a handoff")
	b.endSession()

	c := start(t, startOptions{cache: cache, image: pythonImage, args: egress})
	decodeStructured(t, c.call("workspace_attach", map[string]any{"handle": h.Handle}), &tools.WorkspaceAttachResult{})
	refused(c, other, "the handed-over workspace attached by another process")
	c.endSession()

	d := start(t, startOptions{cache: cache, image: pythonImage, args: egress})
	decodeStructured(t, d.call("workspace_attach", map[string]any{"handle": fork[0].Handle}), &tools.WorkspaceAttachResult{})
	refused(d, dropped, "a fork made after the drop, claimed by another process")
	if out := fetch(d, other); !strings.Contains(out, "reached-other") {
		t.Errorf("a fork made before the lock lost the host it was not locked out of: %q", out)
	}
	d.endSession()

	recordPromise(promiseFigure{Class: "egress policy: a kept workspace's model drops a host and locks its egress, then its server is killed with SIGKILL and started again, it hands the workspace over to another process, and a fork made between the drop and the lock is claimed by another process",
		Tried: tried, Broken: broken,
		Measured: fmt.Sprintf("%d of %d requests for a dropped or locked host went through after the restart, the handoff (both sides) and the fork", broken, tried)})
}
