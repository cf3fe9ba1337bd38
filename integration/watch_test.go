package integration

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/workspace"
)

// updates records the resources/updated notifications a client hears.
type updates struct {
	mu   sync.Mutex
	uris []string
}

func (p *proc) listenForUpdates(uris ...string) *updates {
	p.t.Helper()
	u := &updates{}
	p.client.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/resources/updated" {
			u.mu.Lock()
			u.uris = append(u.uris, n.Params.AdditionalFields["uri"].(string))
			u.mu.Unlock()
		}
	})
	for _, uri := range uris {
		var sub mcp.SubscribeRequest
		sub.Params.URI = uri
		//lint:ignore SA1019 clients of the protocol before 2026-07-28 still subscribe this way; the server serves them
		if err := p.client.Subscribe(context.Background(), sub); err != nil {
			p.t.Fatalf("subscribe %s: %v", uri, err)
		}
	}
	return u
}

// count is how many notifications named uri.
func (u *updates) count(uri string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for _, got := range u.uris {
		if got == uri {
			n++
		}
	}
	return n
}

// watchSnapshot is the snapshot resource, parsed.
type watchSnapshot struct {
	Files []workspace.TouchedFile `json:"files"`
	Watch workspace.WatchReport   `json:"watch"`
}

func (p *proc) snapshot() watchSnapshot {
	p.t.Helper()
	text, err := p.readResource("wink://workspace/snapshot")
	if err != nil {
		p.t.Fatal(err)
	}
	var s watchSnapshot
	if err := json.Unmarshal([]byte(text), &s); err != nil {
		p.t.Fatalf("snapshot %s: %v", text, err)
	}
	return s
}

func (s watchSnapshot) file(path string) (workspace.TouchedFile, bool) {
	i := slices.IndexFunc(s.Files, func(f workspace.TouchedFile) bool { return f.Path == path })
	if i < 0 {
		return workspace.TouchedFile{}, false
	}
	return s.Files[i], true
}

// TestCommandChangesReachSubscribers: what podman_shell, evaluate_python's
// code and a background job change in the workspace reaches the snapshot,
// marked as a command's, and the subscribers of the files and of the
// snapshot, over each transport, as a tool's change does.
func TestCommandChangesReachSubscribers(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr, image: pythonImage})
		const (
			built  = "wink://workspace/files/build/out.txt"
			py     = "wink://workspace/files/py.txt"
			late   = "wink://workspace/files/late.txt"
			gone   = "wink://workspace/files/gone.txt"
			snapsh = "wink://workspace/snapshot"
		)
		p.tool("write_file", map[string]any{"file_path": "gone.txt", "content": "soon removed"}, &struct{}{})
		u := p.listenForUpdates(built, py, late, gone, snapsh)
		if r := p.run("sh", "-c", "mkdir -p build && echo hi > build/out.txt && sed -i s/hi/hello/ build/out.txt && rm gone.txt"); r.ExitCode != 0 {
			t.Fatalf("shell: %+v", r)
		}
		waitUntil(t, 10*time.Second, "the shell's changes notified", func() bool { return u.count(built) > 0 && u.count(gone) > 0 })
		p.tool("evaluate_python", map[string]any{"code": "open('/workspace/py.txt', 'w').write('from python')"}, &struct{}{})
		waitUntil(t, 10*time.Second, "the code's change notified", func() bool { return u.count(py) > 0 })

		started := p.shell(map[string]any{"command": []string{"sh", "-c", "sleep 1; echo later > late.txt"}, "background": true})
		p.waitJob(started.Job, 20*time.Second)
		// Over HTTP without a listening stream, a change no call made
		// travels on the next call's stream.
		waitUntil(t, 10*time.Second, "the job's change notified", func() bool {
			p.snapshot()
			return u.count(late) > 0
		})

		s := p.snapshot()
		for path, size := range map[string]int64{"build/out.txt": 6, "py.txt": 11, "late.txt": 6} {
			if f, ok := s.file(path); !ok || f.ChangedBy != workspace.ByCommand || f.SizeBytes != size || f.Deleted {
				t.Errorf("snapshot %s: %+v, want a command's change to %d bytes", path, f, size)
			}
		}
		if f, _ := s.file("gone.txt"); !f.Deleted || f.ChangedBy != workspace.ByCommand {
			t.Errorf("snapshot gone.txt: %+v, want removed by a command", f)
		}
		if s.Watch.State != "full" {
			t.Errorf("watch: %+v", s.Watch)
		}
		if n := u.count(built); n > 2 {
			t.Errorf("build/out.txt notified %d times for one command", n)
		}
	})
}

// TestToolChangesAreNotCommands: a file tool's change is reported once,
// as the tool's, however the watch saw it.
func TestToolChangesAreNotCommands(t *testing.T) {
	p := start(t, startOptions{})
	const uri = "wink://workspace/files/a/b/tool.txt"
	u := p.listenForUpdates(uri)
	p.tool("write_file", map[string]any{"file_path": "a/b/tool.txt", "content": "one"}, &struct{}{})
	p.tool("edit_file", map[string]any{"file_path": "a/b/tool.txt", "old_string": "one", "new_string": "two"}, &struct{}{})
	p.run("true") // a command's end reports what the watch holds
	time.Sleep(300 * time.Millisecond)
	s := p.snapshot()
	if f, _ := s.file("a/b/tool.txt"); f.ChangedBy != workspace.ByTool || f.Version != 2 {
		t.Errorf("snapshot: %+v, want two tool writes", f)
	}
	if len(s.Files) != 1 {
		t.Errorf("snapshot lists %+v, want only the tool's file (no temporary files, no directories)", s.Files)
	}
	if n := u.count(uri); n != 2 {
		t.Errorf("%d notifications, want one per tool change", n)
	}
}

// TestBurstIsCoalesced: a command writing 50,000 files in 2,000
// directories (an npm install) makes a bounded snapshot, a few
// notifications a second, and leaves the agent's memory bounded.
func TestBurstIsCoalesced(t *testing.T) {
	p := start(t, startOptions{image: pythonImage})
	const snapsh = "wink://workspace/snapshot"
	u := p.listenForUpdates(snapsh, "wink://workspace/files/node_modules/pkg7/lib/f7.js")
	before := agentHighWater(t, p)
	start := time.Now()
	burst := "import os\nfor i in range(50000):\n d = f'/workspace/node_modules/pkg{i % 2000}/lib'\n os.makedirs(d, exist_ok=True)\n open(f'{d}/f{i}.js', 'w').write('x')\n"
	if r := p.shell(map[string]any{"command": []string{"python3", "-c", burst}, "timeout_seconds": 600}); r.ExitCode != 0 {
		t.Fatalf("burst: %+v", r)
	}
	took := time.Since(start)
	time.Sleep(time.Second) // the rest of the burst, reported apart
	p.snapshot()
	after := agentHighWater(t, p)
	s := p.snapshot()
	listed, folded := 0, 0
	for _, f := range s.Files {
		listed++
		folded += f.Folded
	}
	notes := u.count(snapsh)
	t.Logf("50,000 files in %s: %d snapshot notifications, %d entries (%d changes folded), agent high-water %d KiB -> %d KiB", took.Round(time.Millisecond), notes, listed, folded, before, after)
	if listed > workspace.MaxSnapshotFiles {
		t.Errorf("the snapshot lists %d entries, past its bound %d", listed, workspace.MaxSnapshotFiles)
	}
	if f, ok := s.file("node_modules/pkg7/lib/f7.js"); !ok && folded == 0 {
		t.Errorf("f7.js neither listed (%+v) nor folded", f)
	}
	// Reports come at most every 100 ms, plus one per command's result.
	if maxNotes := int(took/(100*time.Millisecond)) + 5; notes > maxNotes {
		t.Errorf("%d snapshot notifications in %s, more than coalescing allows (%d)", notes, took, maxNotes)
	}
	if notes == 0 || u.count("wink://workspace/files/node_modules/pkg7/lib/f7.js") == 0 {
		t.Errorf("the burst was not notified: %d to the snapshot", notes)
	}
	if after-before > 64<<10 {
		t.Errorf("the agent's memory grew by %d KiB during the burst", after-before)
	}
}

// agentHighWater is the agent's peak resident memory, in KiB.
func agentHighWater(t *testing.T, p *proc) int {
	t.Helper()
	r := p.run("sh", "-c", "grep VmHWM /proc/1/status")
	fields := strings.Fields(r.Stdout)
	if len(fields) < 2 {
		t.Fatalf("reading the agent's memory: %+v", r)
	}
	n, err := strconv.Atoi(fields[1])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestWatchLimitFallsBack: past --watch-dirs a directory is not watched;
// the snapshot says so and why, the log warns, and after each command
// the directory's subscribers hear that it may have changed; commands run
// as ever.
func TestWatchLimitFallsBack(t *testing.T) {
	p := start(t, startOptions{args: []string{"--watch-dirs", "3"}})
	const deep = "wink://workspace/files/d4/f"
	u := p.listenForUpdates(deep)
	if r := p.run("sh", "-c", "mkdir d1 d2 d3 d4 && echo x > d4/f"); r.ExitCode != 0 {
		t.Fatalf("%+v", r)
	}
	waitUntil(t, 10*time.Second, "the unwatched directory's subscriber notified", func() bool { return u.count(deep) > 0 })
	// The status changed as the command ran: it comes with the next report.
	waitUntil(t, 10*time.Second, "the snapshot saying the watch is partial", func() bool { return p.snapshot().Watch.State == "partial" })
	if s := p.snapshot(); len(s.Watch.Unwatched) != 2 || !strings.Contains(s.Watch.Reason, "--watch-dirs") {
		t.Errorf("watch: %+v", s.Watch)
	}
	p.waitLog(10*time.Second, "the workspace is not watched in full: changes commands make there are reported as directories that may have changed, after each command", map[string]any{"watch": "partial"})
	before := u.count(deep)
	p.run("true")
	waitUntil(t, 10*time.Second, "notified again after the next command", func() bool { return u.count(deep) > before })
}

// TestWatchOff: --watch-dirs 0 watches nothing, and says so; every
// command's end tells subscribers anything may have changed.
func TestWatchOff(t *testing.T) {
	p := start(t, startOptions{args: []string{"--watch-dirs", "0"}})
	const uri = "wink://workspace/files/x"
	u := p.listenForUpdates(uri)
	p.run("sh", "-c", "echo x > x")
	waitUntil(t, 10*time.Second, "the subscriber notified", func() bool { return u.count(uri) > 0 })
	if s := p.snapshot(); s.Watch.State != "off" || len(s.Files) != 0 || !strings.Contains(s.Watch.Reason, "--watch-dirs 0") {
		t.Errorf("snapshot: %+v", s)
	}
}
