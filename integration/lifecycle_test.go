package integration

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestSessionsGetSeparateContainersAndFiles(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr string) {
		a := start(t, startOptions{transport: tr})
		b := start(t, startOptions{transport: tr})
		a.run("sh", "-c", "echo secret-of-a > mine.txt")
		if res := b.run("ls", "-A"); res.Stdout != "" {
			t.Errorf("session b sees %q in its workspace", res.Stdout)
		}
		if res := b.run("sh", "-c", "find / -name mine.txt 2>/dev/null; true"); res.Stdout != "" {
			t.Errorf("session b finds a's file: %q", res.Stdout)
		}
		if ca, cb := a.container(), b.container(); ca == cb || ca == "" {
			t.Errorf("containers %q and %q", ca, cb)
		}
	})
}

// TestEndingTheSessionRemovesContainerAndFiles ends a session the way each
// transport's client does: closing stdin, DELETE, disconnecting the stream.
func TestEndingTheSessionRemovesContainerAndFiles(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr})
		p.run("sh", "-c", "echo x > f")
		name, dir := p.container(), p.sessionDir()
		if !fileExists(filepath.Join(dir, "workspace", "f")) {
			t.Fatalf("the session's file is not in %s", dir)
		}
		p.endSession()
		waitUntil(t, 15*time.Second, "the container to go", func() bool { return !containerExists(t, name) })
		waitUntil(t, 5*time.Second, "the session directory to go", func() bool { return !fileExists(dir) })
	})
}

func TestSigtermDuringACommandRemovesEverything(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr string) {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
			t.Run(sig.String(), func(t *testing.T) {
				p := start(t, startOptions{transport: tr, args: []string{"--drain-timeout", "1s"}})
				name, dir := p.container(), p.sessionDir()
				go p.client.CallTool(t.Context(), shellRequest("sh", "-c", "touch started; sleep 100"))
				started := filepath.Join(dir, "workspace", "started")
				waitUntil(t, 10*time.Second, "the command to start", func() bool { return fileExists(started) })
				if err := p.cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				p.waitExit(15 * time.Second)
				if containerExists(t, name) {
					t.Errorf("container %s survived %s", name, sig)
				}
				if dirs := sessionDirs(t, p.cache); len(dirs) != 0 {
					t.Errorf("session directories left: %v", dirs)
				}
			})
		}
	})
}

func TestRestartAfterKill9RemovesOrphansButNotLiveServers(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr string) {
		cache := t.TempDir()
		live := start(t, startOptions{transport: tr, cache: cache})
		liveName := live.container()
		dead := start(t, startOptions{transport: tr, cache: cache})
		deadName := dead.container()
		dead.run("sh", "-c", "echo x > f")
		if err := dead.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		dead.waitExit(10 * time.Second)
		if !containerExists(t, deadName) {
			t.Fatal("the killed server's container vanished by itself; the test proves nothing")
		}

		next := start(t, startOptions{transport: tr, cache: cache})
		rec := next.waitLog(60*time.Second, "orphan sweep done", nil)
		if removed, _ := rec["removed"].(float64); removed < 1 {
			t.Errorf("sweep removed %v containers", rec["removed"])
		}
		if containerExists(t, deadName) {
			t.Errorf("orphan %s still exists", deadName)
		}
		if !containerExists(t, liveName) {
			t.Errorf("the sweep removed %s, a live server's container", liveName)
		}
		if res := live.run("echo", "alive"); res.Stdout != "alive\n" {
			t.Errorf("the live server's session broke: %+v", res)
		}
		if next.logs.find("workspace orphan_removed", map[string]any{"container": deadName}) == nil {
			t.Error("no orphan_removed event for the dead server's container")
		}
		if _, err := os.Stat(filepath.Join(cache, "instances", instanceOf(t, dead))); !os.IsNotExist(err) {
			t.Errorf("the dead server's directory is left: %v", err)
		}
		if _, err := os.Stat(filepath.Join(cache, "instances", instanceOf(t, live))); err != nil {
			t.Errorf("the live server's directory is gone: %v", err)
		}
	})
}

// instanceOf returns the instance ID a server logged at start.
func instanceOf(t *testing.T, p *proc) string {
	t.Helper()
	rec := p.logs.find("workspace manager ready", nil)
	if rec == nil {
		t.Fatal("no instance logged")
	}
	return rec["instance"].(string)
}

func TestContainerRemovedFromOutsideIsRecreated(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr})
		p.run("sh", "-c", "echo kept > f")
		name := p.container()
		if out, err := podman(t, "rm", "-f", "-t", "0", name); err != nil {
			t.Fatalf("podman rm: %v %s", err, out)
		}
		if res := p.run("cat", "f"); res.Stdout != "kept\n" {
			t.Errorf("after recreation f reads %q", res.Stdout)
		}
		// The log arrives on stderr, which may be read after the answer.
		p.waitLog(10*time.Second, "workspace recreated_after_failure", nil)
		if n := p.logs.count("recreated_after_failure"); n != 1 {
			t.Errorf("%d recreated_after_failure events, want 1", n)
		}
		if !containerExists(t, name) {
			t.Error("no container after the next call")
		}
	})
}

// TestIdleSessions checks idle expiry: over stdio and SSE the container goes
// and the files stay for the next call; a streamable HTTP session, which a
// client may abandon without a DELETE, ends with its files.
func TestIdleSessions(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr, args: []string{"--idle-timeout", "1s"}})
		p.run("sh", "-c", "echo kept > f")
		name, dir := p.container(), p.sessionDir()
		waitUntil(t, 15*time.Second, "idle expiry", func() bool { return !containerExists(t, name) })
		if tr == "http" {
			waitUntil(t, 5*time.Second, "the session directory to go", func() bool { return !fileExists(dir) })
			var req mcp.CallToolRequest
			req.Params.Name = "podman_shell"
			req.Params.Arguments = map[string]any{"command": []string{"true"}}
			if _, err := p.client.CallTool(t.Context(), req); err == nil {
				t.Error("a call in an expired session succeeded")
			}
			return
		}
		if p.logs.count("idle_cleanup") != 1 {
			t.Errorf("idle_cleanup events: %d", p.logs.count("idle_cleanup"))
		}
		if res := p.run("cat", "f"); res.Stdout != "kept\n" {
			t.Errorf("after idle cleanup f reads %q", res.Stdout)
		}
	})
}

func TestStopActionStartsFresh(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr})
		p.run("sh", "-c", "echo gone > f")
		name := p.container()
		res := p.shell(map[string]any{"action": "stop"})
		if res.Container != name || containerExists(t, name) {
			t.Errorf("stop: %+v, container exists %v", res, containerExists(t, name))
		}
		if got := p.run("ls", "-A"); got.Stdout != "" {
			t.Errorf("after stop the workspace holds %q", got.Stdout)
		}
	})
}

func TestMissingImageIsAClearError(t *testing.T) {
	t.Parallel() // it mostly waits: see the package doc
	eachTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr, image: "localhost/wink-no-such-image:1"})
		res := p.call("podman_shell", map[string]any{"command": []string{"true"}})
		text := textOf(res)
		for _, want := range []string{"localhost/wink-no-such-image:1", "pulling it failed", "make setup"} {
			if !res.IsError || !strings.Contains(text, want) {
				t.Errorf("error %q lacks %q", text, want)
			}
		}
		if got := containersNamed(t, p.prefix); len(got) != 0 {
			t.Errorf("containers created without an image: %v", got)
		}
	})
}
