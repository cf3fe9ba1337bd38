package integration

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/sys/unix"

	"github.com/wink-mcp/wink-mcp/tools"
)

// probe is a well-behaved neighbour session reading a 1 KiB file every
// probeInterval; its latencies show whether an abusive session starves others.
type probe struct {
	p    *proc
	mu   sync.Mutex
	lat  []time.Duration
	errs int
	stop chan struct{}
	done chan struct{}
}

// probeInterval is short so that even a brief abuse case gets a few dozen
// samples, and the baseline hundreds: a p99 over 60 samples was the top one
// or two, and swung from 2.2 to 7.8 ms between runs.
const probeInterval = 25 * time.Millisecond

func startProbe(t *testing.T) *probe {
	pr := &probe{p: start(t, startOptions{}), stop: make(chan struct{}), done: make(chan struct{})}
	var wrote map[string]any
	pr.p.tool("write_file", map[string]any{"file_path": "probe.txt", "content": strings.Repeat("p", 1024)}, &wrote)
	go func() {
		defer close(pr.done)
		tick := time.NewTicker(probeInterval)
		defer tick.Stop()
		for {
			select {
			case <-pr.stop:
				return
			case <-tick.C:
			}
			var req mcp.CallToolRequest
			req.Params.Name = "read_file"
			req.Params.Arguments = map[string]any{"file_path": "probe.txt"}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			begin := time.Now()
			res, err := pr.p.client.CallTool(ctx, req)
			elapsed := time.Since(begin)
			cancel()
			pr.mu.Lock()
			if err != nil || res.IsError {
				pr.errs++
			} else {
				pr.lat = append(pr.lat, elapsed)
			}
			pr.mu.Unlock()
		}
	}()
	t.Cleanup(pr.close)
	return pr
}

// take returns the latencies gathered since the last take.
func (pr *probe) take() []time.Duration {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	out := pr.lat
	pr.lat = nil
	return out
}

func (pr *probe) close() {
	select {
	case <-pr.stop:
	default:
		close(pr.stop)
	}
	<-pr.done
}

// abuseCase is one abusive command and what containing it looks like.
type abuseCase struct {
	name    string
	command []string
	timeout int
	check   func(t *testing.T, p *proc, res tools.ShellResult) string // says how it was contained, or fails
}

func TestReliabilityAbuse(t *testing.T) {
	abuser := start(t, startOptions{})
	abuser.run("true")
	pr := startProbe(t)
	time.Sleep(10 * time.Second) // the probe's baseline, before any abuse
	baseline := pr.take()
	base := percentile(baseline, 99)
	t.Logf("neighbour baseline: %d samples, p50 %.2f ms, p99 %.2f ms", len(baseline), percentile(baseline, 50), base)

	for _, c := range abuseCases() {
		t.Run(c.name, func(t *testing.T) {
			pr.take()
			begin := time.Now()
			res := abuser.shell(map[string]any{"command": c.command, "timeout_seconds": c.timeout})
			took := time.Since(begin)
			how := c.check(t, abuser, res)
			ended := time.Now()
			recovered := recover5s(t, abuser)
			recovery := time.Since(ended)
			time.Sleep(300 * time.Millisecond) // a few more neighbour samples
			during := pr.take()
			p99 := percentile(during, 99)
			t.Logf("%s: %s in %s; echo ok after %s; neighbour p99 %.2f ms (baseline %.2f ms, %d samples)",
				c.name, how, took.Round(time.Millisecond), recovery.Round(time.Millisecond), p99, base, len(during))
			if !recovered {
				t.Errorf("the session did not answer `echo ok` within 5 s")
			}
			// On a shared 2-core machine one sample in 60 can spike; the ratio
			// is a gate of the full run (make reliability) and a figure here.
			if p99 > 3*base && os.Getenv("WINK_RELIABILITY_OUT") != "" {
				t.Errorf("the neighbour's p99 %.2f ms is over 3 times its baseline %.2f ms", p99, base)
			}
			suite.record(func(f *figures) {
				f.Abuse = append(f.Abuse, abuseFigure{Case: c.name, Contained: how, CallMillis: took.Milliseconds(),
					RecoveryMs: recovery.Milliseconds(), NeighbourP99: p99, BaselineP99: base,
					NeighbourMax: percentile(during, 100), NeighbourSeen: len(during)})
			})
		})
	}
	if pr.errs > 0 {
		t.Errorf("the neighbour saw %d failed calls", pr.errs)
	}
}

// recover5s polls `echo ok` until it answers, for at most 5 s.
func recover5s(t *testing.T, p *proc) bool {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		res := p.call("podman_shell", map[string]any{"command": []string{"echo", "ok"}, "timeout_seconds": 5})
		if !res.IsError && strings.Contains(textOf(res), "ok") {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

func abuseCases() []abuseCase {
	return []abuseCase{
		{name: "fork bomb", command: []string{"sh", "-c", ":(){ :|:& };:"}, timeout: 10,
			check: func(t *testing.T, p *proc, res tools.ShellResult) string {
				if !res.TimedOut && res.ExitCode == 0 {
					t.Errorf("the fork bomb ended cleanly: %+v", res)
				}
				left := strings.TrimSpace(p.run("sh", "-c", "ps -o pid= | wc -l").Stdout)
				how := "the pids limit stopped it (exit " + strconv.Itoa(res.ExitCode) + ")"
				if res.TimedOut {
					how = "killed at the 10 s timeout"
				}
				return how + "; " + left + " processes left in the container"
			}},
		{name: "memory bomb", command: []string{"awk", `BEGIN { s = "x"; while (1) s = s s }`}, timeout: 30,
			check: func(t *testing.T, p *proc, res tools.ShellResult) string {
				if res.ExitCode != 137 {
					t.Errorf("the memory bomb exited %d, want 137 (OOM-killed): %s", res.ExitCode, res.Stderr)
				}
				return "OOM-killed at the 1 GiB limit (exit 137); the agent survived"
			}},
		{name: "fill /workspace", command: []string{"sh", "-c", "dd if=/dev/zero of=big bs=1M 2>&1 | grep -o 'No space left on device'; cat /dev/zero 2>/dev/null > big2; df -k . | tail -1"}, timeout: 120,
			check: func(t *testing.T, p *proc, res tools.ShellResult) string {
				if !strings.Contains(res.Stdout, "No space left on device") {
					t.Errorf("filling /workspace: %q", res.Stdout)
				}
				wr := p.call("write_file", map[string]any{"file_path": "more.txt", "content": strings.Repeat("x", 40000)})
				if !wr.IsError || !strings.Contains(textOf(wr), "no space left") {
					t.Errorf("write_file on a full disk: %.200s", textOf(wr))
				}
				images, _ := filepath.Glob(filepath.Join(p.cache, "instances", "*", "disks", "*.img"))
				for _, img := range images {
					var st unix.Stat_t
					if unix.Stat(img, &st) == nil && st.Blocks*512 > 2<<30+64<<20 {
						t.Errorf("the session's disk takes %d bytes of the host's, over the 2 GiB limit", st.Blocks*512)
					}
				}
				if len(images) != 1 {
					t.Errorf("%d session disk images, want 1", len(images))
				}
				p.run("rm", "big", "big2")
				return "ENOSPC at the 2 GiB disk limit; write_file says \"no space left\""
			}},
		{name: "fill /tmp", command: []string{"sh", "-c", "dd if=/dev/zero of=/tmp/big bs=1M 2>&1 | grep -o 'No space left on device'"}, timeout: 60,
			check: func(t *testing.T, p *proc, res tools.ShellResult) string {
				if !strings.Contains(res.Stdout, "No space left on device") {
					t.Errorf("filling /tmp: %q", res.Stdout)
				}
				p.run("rm", "/tmp/big")
				return "ENOSPC at the 256 MiB tmpfs size"
			}},
		{name: "1 GB of output", command: []string{"head", "-c", "1000000000", "/dev/zero"}, timeout: 120,
			check: func(t *testing.T, p *proc, res tools.ShellResult) string {
				if res.StdoutBytes != 1e9 || len(res.Stdout) > 40<<10 || !strings.HasSuffix(res.Stdout, "[truncated]") {
					t.Errorf("1 GB of output: counted %d, kept %d bytes", res.StdoutBytes, len(res.Stdout))
				}
				return "32 KiB kept, all 1,000,000,000 bytes counted"
			}},
		{name: "ignores SIGTERM", command: []string{"sh", "-c", "trap '' TERM; sleep 1000"}, timeout: 2,
			check: func(t *testing.T, p *proc, res tools.ShellResult) string {
				if !res.TimedOut || res.ExitCode != 124 || res.DurationMS > 5000 {
					t.Errorf("a process ignoring SIGTERM: %+v", res)
				}
				return "killed at the 2 s timeout (exit 124) in " + strconv.FormatInt(res.DurationMS, 10) + " ms"
			}},
		{name: "setsid children", command: []string{"sh", "-c", "setsid sleep 1000 & setsid sh -c 'sleep 1000 &' & echo started"}, timeout: 10,
			check: func(t *testing.T, p *proc, res tools.ShellResult) string {
				if res.ExitCode != 0 || res.DurationMS > 5000 {
					t.Errorf("a command leaving setsid children: %+v", res)
				}
				if left := p.run("sh", "-c", "ps -o args= | grep -c '^sleep 1000' || true").Stdout; strings.TrimSpace(left) != "0" {
					t.Errorf("%s setsid children outlived their command", strings.TrimSpace(left))
				}
				return "the call returned when its command did; no child left"
			}},
		{name: "closes stdout early", command: []string{"sh", "-c", "exec >&- 2>&-; sleep 200"}, timeout: 2,
			check: func(t *testing.T, p *proc, res tools.ShellResult) string {
				if !res.TimedOut || res.DurationMS > 5000 {
					t.Errorf("a command that closed its output: %+v", res)
				}
				return "killed at the 2 s timeout; EOF was not trusted"
			}},
	}
}
