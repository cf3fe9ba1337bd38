package integration

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/tools"
)

// TestReliabilityJobAbuse attacks jobs while another session calls: a fork
// bomb started as a job, 1,000 job starts at once, and a job that fills
// its output file past the session's disk limit. Each is contained, says
// what happened, and the neighbour's calls keep answering.
func TestReliabilityJobAbuse(t *testing.T) {
	p := start(t, startOptions{transport: "http", args: []string{"--warm", "0", "--disk-limit", "64m"}})
	p.run("true")
	done := neighbourCalls(t, p)
	broken := 0
	fail := func(format string, args ...any) {
		t.Errorf(format, args...)
		broken++
	}

	// A fork bomb as a job, bounded by its timeout: the pids limit holds
	// and the session answers afterwards.
	bomb := p.shell(map[string]any{"command": []string{"sh", "-c", "b() { b | b & }; b"}, "background": true, "timeout_seconds": 5, "grace_seconds": 0})
	if j := p.waitJob(bomb.Job, 30*time.Second); j.State != "exited" {
		fail("the fork bomb job: %+v", j)
	}
	if ok := p.run("echo", "ok"); ok.Stdout != "ok\n" {
		fail("after the fork bomb: %+v", ok)
	}
	if ps := p.run("ps", "-o", "pid,args").Stdout; strings.Count(ps, "\n") > 12 {
		fail("the fork bomb's processes outlived its job:\n%s", ps)
	}

	// 1,000 starts at once: at most 16 run, the others are told why.
	const starts = 1000
	var mu sync.Mutex
	started, refused, other := 0, 0, []string{}
	var crowd sync.WaitGroup
	sem := make(chan struct{}, 50)
	for range starts {
		crowd.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			res := p.call("podman_shell", map[string]any{"command": []string{"sleep", "300"}, "background": true})
			mu.Lock()
			defer mu.Unlock()
			switch text := textOf(res); {
			case !res.IsError:
				started++
			case strings.Contains(text, "the most allowed"):
				refused++
			default:
				other = append(other, text)
			}
		})
	}
	crowd.Wait()
	if started != 16 || refused != starts-16 || len(other) > 0 {
		fail("%d job starts at once: %d started, %d refused with the limit named, other answers %q; want 16 and %d", starts, started, refused, other, starts-16)
	}
	for _, j := range p.job(map[string]any{"action": "list"}).Jobs {
		if j.State == "running" {
			p.job(map[string]any{"action": "signal", "id": j.ID, "signal": "KILL"})
		}
	}

	// A job writing 200 MB into a 64 MiB workspace: what fits is kept,
	// the rest is counted as dropped with the reason, and the job is never
	// blocked by its output.
	flood := p.shell(map[string]any{"command": []string{"sh", "-c", "yes wink-mcp-output | head -c 200000000; echo finished >&2"}, "background": true})
	j := p.waitJob(flood.Job, 60*time.Second)
	if *j.ExitCode != 0 || j.StdoutBytes != 200_000_000 || j.DroppedBytes == 0 || !strings.Contains(j.DroppedReason, "no space") {
		fail("a job writing past the disk limit: %+v", j)
	}
	if tail := p.job(map[string]any{"action": "output", "id": flood.Job, "stream": "stderr"}); tail.Data != "finished\n" {
		fail("its stderr: %q", tail.Data)
	}
	var first tools.JobResult
	p.tool("job", map[string]any{"action": "output", "id": flood.Job, "limit": 17}, &first)
	if first.Data != "wink-mcp-output\nw" {
		fail("its kept output starts %q", first.Data)
	}

	times, failed := done()
	if failed > 0 || len(times) == 0 {
		fail("the neighbour session: %d calls failed, %d answered", failed, len(times))
	}
	recordPromise(promiseFigure{Class: "job abuse: a fork bomb as a job, 1,000 job starts at once, a job writing 200 MB into a 64 MiB workspace; another session calling meanwhile", Tried: starts + 2, Broken: broken,
		Measured: fmt.Sprintf("the bomb ended by its timeout; %d started and %d were refused with the limit named; %d of 200 MB kept, the rest counted as dropped; the other session's %d calls: p99 %.1f ms, 0 failed",
			started, refused, 200_000_000-j.DroppedBytes, len(times), percentile(times, 99))})
}
