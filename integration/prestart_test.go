package integration

import (
	"testing"
	"time"
)

// TestContainerIsReadyBeforeTheFirstCall checks that a session's container
// is made as soon as the client confirms the session, and that the first
// call uses it: the same container, an empty workspace, nothing made twice.
// TestContainerHardening inspects such a container setting by setting.
func TestContainerIsReadyBeforeTheFirstCall(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr, args: unpooled})
		p.waitLog(60*time.Second, "workspace ready", map[string]any{"event": "ready"})
		made := containersNamed(t, p.prefix)
		if len(made) != 1 {
			t.Fatalf("containers before the first call: %v, want 1", made)
		}
		if got := p.run("ls", "-A", "/workspace"); got.ExitCode != 0 || got.Stdout != "" {
			t.Errorf("the workspace before any write: %+v, want empty", got)
		}
		if name := p.container(); name != made[0] {
			t.Errorf("the first call used %s, not the container made ahead of it (%s)", name, made[0])
		}
		if n := p.logs.count("created"); n != 1 {
			t.Errorf("%d containers created, want 1", n)
		}
	})
}

// TestSessionEndedBeforeItsFirstCallLeavesNothing ends sessions that never
// call a tool, while their container is being made and once it is ready:
// neither leaves a container or a session directory.
func TestSessionEndedBeforeItsFirstCallLeavesNothing(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr string) {
		for _, when := range []string{"while it is made", "once it is ready"} {
			t.Run(when, func(t *testing.T) {
				p := start(t, startOptions{transport: tr, args: unpooled})
				if when == "once it is ready" {
					p.waitLog(60*time.Second, "workspace ready", map[string]any{"event": "ready"})
				}
				p.endSession()
				waitUntil(t, 30*time.Second, "no container", func() bool { return len(containersNamed(t, p.prefix)) == 0 })
				waitUntil(t, 10*time.Second, "no session directory", func() bool { return len(sessionDirs(t, p.cache)) == 0 })
			})
		}
	})
}

// TestLazyMakesNoContainerBeforeACall checks --lazy: a session with no call
// has no container.
func TestLazyMakesNoContainerBeforeACall(t *testing.T) {
	p := start(t, startOptions{args: []string{"--lazy"}})
	time.Sleep(2 * time.Second)
	if made := containersNamed(t, p.prefix); len(made) != 0 {
		t.Errorf("--lazy made %v before any call", made)
	}
	p.run("true")
	if made := containersNamed(t, p.prefix); len(made) != 1 {
		t.Errorf("after the first call: %v", made)
	}
}
