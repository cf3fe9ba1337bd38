package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/tools"
)

// memoryBomb allocates 1 GiB, touching every page.
const memoryBomb = "b = bytearray(1 << 30); print('survived')"

// tryOutOfMemory runs, under a 128 MiB limit, commands the memory limit
// kills (in the foreground, as a job, one of a command's processes) and
// commands killed by the model's own kill -9, and checks that each result
// says which it was. It returns how many were tried and broken.
func tryOutOfMemory(t *testing.T) (tried, broken int) {
	p := start(t, startOptions{image: pythonImage, args: []string{"--memory", "128m"}})
	const limit = "the workspace's memory limit of 128 MiB"
	check := func(what string, exit int, note string, wantExit int, wantNote string) {
		t.Helper()
		tried++
		if exit != wantExit || (wantNote == "") != (note == "") || !strings.Contains(note, wantNote) {
			broken++
			t.Errorf("%s: exit %d, out_of_memory %q; want exit %d and %q", what, exit, note, wantExit, wantNote)
		}
	}
	res := p.shell(map[string]any{"command": []string{"python3", "-c", memoryBomb}, "timeout_seconds": 120})
	check("a memory bomb in the foreground", res.ExitCode, res.OutOfMemory, 137, "killed by "+limit+" (out of memory)")
	if text := textOf(p.call("podman_shell", map[string]any{"command": []string{"python3", "-c", memoryBomb}, "timeout_seconds": 120})); !strings.Contains(text, "exit 137") || !strings.Contains(text, "killed by "+limit) {
		broken++
		t.Errorf("the text of an OOM-killed command: %q", text)
	}
	res = p.shell(map[string]any{"command": []string{"sh", "-c", "python3 -c \"" + memoryBomb + "\"; echo went on"}, "timeout_seconds": 120})
	check("a command one of whose processes the limit killed", res.ExitCode, res.OutOfMemory, 0, limit+" killed 1 process while it ran")
	res = p.shell(map[string]any{"command": []string{"sh", "-c", "kill -9 $$"}})
	check("a command that kills itself with -9", res.ExitCode, res.OutOfMemory, 137, "")

	job := func(argv ...string) string {
		started := p.shell(map[string]any{"command": argv, "background": true})
		return started.Job
	}
	status := func(id string) tools.JobView {
		var view tools.JobView
		waitUntil(t, 2*time.Minute, "job "+id+" to end", func() bool {
			var r tools.JobResult
			decodeStructured(t, p.call("job", map[string]any{"action": "status", "id": id}), &r)
			view = *r.Job
			return view.State == "exited"
		})
		return view
	}
	exitOf := func(v tools.JobView) int {
		if v.ExitCode == nil {
			return -1
		}
		return *v.ExitCode
	}
	bomb := status(job("python3", "-c", memoryBomb))
	check("a memory bomb as a job", exitOf(bomb), bomb.OutOfMemory, 137, "killed by "+limit+" (out of memory)")
	sleeper := job("sh", "-c", "echo $$ > sleeper.pid; exec sleep 600")
	waitUntil(t, time.Minute, "the job's pid file", func() bool { return p.run("test", "-s", "sleeper.pid").ExitCode == 0 })
	p.run("sh", "-c", "kill -9 $(cat sleeper.pid)")
	killed := status(sleeper)
	check("a job the model killed with kill -9", exitOf(killed), killed.OutOfMemory, 137, "")
	if text := textOf(p.call("job", map[string]any{"action": "list"})); strings.Count(text, "killed by "+limit) != 1 {
		broken++
		t.Errorf("the job list should name the one OOM-killed job:\n%s", text)
	}
	return tried, broken
}
