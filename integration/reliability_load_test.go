package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

const loadSessions = 50

// loadCall is one call of the mixed workload a load session repeats.
type loadCall struct {
	tool string
	args func(session, i int) map[string]any
}

var loadMix = []loadCall{
	{"write_file", func(s, i int) map[string]any {
		return map[string]any{"file_path": fmt.Sprintf("f%d.txt", i%10), "content": fmt.Sprintf("session %d call %d\n", s, i)}
	}},
	{"read_file", func(s, i int) map[string]any { return map[string]any{"file_path": fmt.Sprintf("f%d.txt", i%10)} }},
	{"ls", func(int, int) map[string]any { return map[string]any{} }},
	{"grep", func(s, _ int) map[string]any { return map[string]any{"pattern": fmt.Sprintf("session %d ", s)} }},
	{"edit_file", func(s, i int) map[string]any {
		return map[string]any{"file_path": fmt.Sprintf("f%d.txt", i%10), "old_string": "call", "new_string": "CALL"}
	}},
	{"podman_shell", func(_, i int) map[string]any {
		return map[string]any{"command": []string{"cat", fmt.Sprintf("f%d.txt", i%10)}}
	}},
}

func TestReliabilityLoad(t *testing.T) {
	p := launch(t, startOptions{transport: "http", args: unpooled})
	before := sampleResources(t, p)
	began := time.Now()
	duration := soak()
	var (
		mu     sync.Mutex
		lat    = map[string][]time.Duration{}
		first  []time.Duration
		errors []string
		calls  int
		maxExe int
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(errors) < 20 {
			errors = append(errors, fmt.Sprintf(format, args...))
		} else {
			errors = append(errors, "")
		}
	}
	deadline := time.Now().Add(duration)
	var wg sync.WaitGroup
	for s := range loadSessions {
		wg.Go(func() {
			c, err := client.NewStreamableHttpClient(p.url)
			if err != nil {
				fail("session %d: %v", s, err)
				return
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), duration+5*time.Minute)
			defer cancel()
			var init mcp.InitializeRequest
			init.Params.ProtocolVersion = mcp.ProtocolVersion20251125
			init.Params.ClientInfo = mcp.Implementation{Name: "load", Version: "0"}
			if _, err := c.Initialize(ctx, init); err != nil {
				fail("session %d: initialize: %v", s, err)
				return
			}
			for i := 0; time.Now().Before(deadline); i++ {
				call := loadMix[i%len(loadMix)]
				var req mcp.CallToolRequest
				req.Params.Name, req.Params.Arguments = call.tool, call.args(s, i/len(loadMix))
				begin := time.Now()
				res, err := c.CallTool(ctx, req)
				elapsed := time.Since(begin)
				if err == nil && res.IsError && !(call.tool == "edit_file" && strings.Contains(textOf(res), "not found")) {
					err = fmt.Errorf("%.200s", textOf(res))
				}
				if err == nil && call.tool == "read_file" && !strings.Contains(textOf(res), fmt.Sprintf("session %d ", s)) {
					err = fmt.Errorf("read another session's file: %.200s", textOf(res))
				}
				mu.Lock()
				calls++
				if i == 0 {
					first = append(first, elapsed) // includes creating the container
				} else {
					lat[call.tool] = append(lat[call.tool], elapsed)
				}
				mu.Unlock()
				if err != nil {
					fail("session %d: %s: %v", s, call.tool, err)
				}
			}
			// Exec sessions must not pile up in Podman while a session works.
			if names := containersNamed(t, p.prefix); len(names) > 0 && s == 0 {
				for _, n := range names {
					out, _ := podman(t, "inspect", "--format", "{{len .ExecIDs}}", n)
					k, _ := strconv.Atoi(out)
					mu.Lock()
					maxExe = max(maxExe, k)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	waitUntil(t, 60*time.Second, "every session's container to go", func() bool { return len(containersNamed(t, p.prefix)) == 0 })
	time.Sleep(2 * time.Second) // idle HTTP connections close
	after := sampleResources(t, p)

	fig := &loadFigures{Sessions: loadSessions, Seconds: duration.Seconds(), Calls: calls, Errors: len(errors),
		Tools: map[string]latencyStats{}, Before: before, After: after, MaxExecID: maxExe, Zombies: zombiesStartedSince(t, began),
		FirstCall: latencyStats{Calls: len(first), P50: percentile(first, 50), P99: percentile(first, 99)}}
	for tool, l := range lat {
		fig.Tools[tool] = latencyStats{Calls: len(l), P50: percentile(l, 50), P99: percentile(l, 99)}
		t.Logf("%-13s %6d calls  p50 %7.2f ms  p99 %7.2f ms", tool, len(l), percentile(l, 50), percentile(l, 99))
	}
	t.Logf("first call    %6d calls  p50 %7.2f ms  p99 %7.2f ms (creates the container)", len(first), percentile(first, 50), percentile(first, 99))
	t.Logf("%d sessions for %s: %d calls, %d errors; before %+v, after %+v; at most %d exec sessions per container; %d zombies left",
		loadSessions, duration, calls, len(errors), before, after, maxExe, fig.Zombies)
	for _, e := range errors {
		if e != "" {
			t.Error(e)
		}
	}
	// What a session holds is released with it: the live heap may keep
	// caches and pools warm (a few MiB), not grow with the calls made.
	if after.Goroutines > before.Goroutines+20 || after.FDs > before.FDs+20 || after.HeapKiB > before.HeapKiB+8<<10 {
		t.Errorf("the server grew: before %+v, after %+v", before, after)
	}
	// Each container and each exec channel has a conmon; Podman keeps an
	// exec session's conmon for its exit_command_delay (300 s by default)
	// after the exec ends, so up to two per session may still be there.
	if after.Containers > 0 || after.Conmons > before.Conmons+2*loadSessions {
		t.Errorf("conmon processes or containers piled up: before %+v, after %+v", before, after)
	}
	// Exited conmons must be reaped (podman#16431); a few may be mid-exit.
	if fig.Zombies > 5 {
		t.Errorf("%d processes started during the load are zombies after it", fig.Zombies)
	}
	if maxExe > 4 {
		t.Errorf("%d exec sessions in one container; they pile up", maxExe)
	}
	suite.record(func(f *figures) { f.Load = fig })
}

// sampleResources reads the server's goroutines, live heap and open files
// (from its SIGUSR1 stats log) and RSS, and the host's live conmon
// processes and containers.
func sampleResources(t *testing.T, p *proc) resourceSample {
	t.Helper()
	pid := p.cmd.Process.Pid
	marker := len(p.logs.records())
	if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	var r resourceSample
	waitUntil(t, 10*time.Second, "runtime stats", func() bool {
		recs := p.logs.records()
		for _, rec := range recs[min(marker, len(recs)):] {
			if rec["msg"] == "runtime stats" {
				r.Goroutines = int(rec["goroutines"].(float64))
				r.FDs = int(rec["open_fds"].(float64))
				r.HeapKiB = int(rec["live_heap_bytes"].(float64)) / 1024
				return true
			}
		}
		return false
	})
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
				r.RSSKiB, _ = strconv.Atoi(strings.Fields(v)[0])
			}
		}
	}
	for _, proc := range hostProcesses(t) {
		if proc.comm == "conmon" && !proc.zombie {
			r.Conmons++
		}
	}
	r.Containers = len(containersNamed(t, p.prefix))
	return r
}

// hostProcess is one line of `ps`.
type hostProcess struct {
	comm    string
	zombie  bool
	started time.Time // to the second
}

func hostProcesses(t *testing.T) []hostProcess {
	t.Helper()
	now := time.Now()
	out, err := exec.Command("ps", "-eo", "stat=,etimes=,comm=").Output()
	if err != nil {
		t.Fatalf("ps: %v", err)
	}
	var procs []hostProcess
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) < 3 {
			continue
		}
		age, _ := strconv.Atoi(f[1])
		procs = append(procs, hostProcess{comm: f[2], zombie: strings.HasPrefix(f[0], "Z"), started: now.Add(-time.Duration(age) * time.Second)})
	}
	return procs
}

// zombiesStartedSince counts the host's zombie processes that started at
// or after begin: the ones a test made and nothing reaped. Older ones, such
// as conmons adopted by another reaper when a test restarted the Podman
// service, are not the test's.
func zombiesStartedSince(t *testing.T, begin time.Time) int {
	t.Helper()
	n := 0
	for _, proc := range hostProcesses(t) {
		if proc.zombie && !proc.started.Before(begin.Truncate(time.Second)) {
			n++
		}
	}
	return n
}
