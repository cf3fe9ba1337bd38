package integration

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/tools"
)

// jobTransports are the transports the job scenarios run over.
var jobTransports = []string{"stdio", "http"}

// eachJobTransport runs a scenario over stdio and streamable HTTP at once.
func eachJobTransport(t *testing.T, scenario func(t *testing.T, transport string)) {
	for _, tr := range jobTransports {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			scenario(t, tr)
		})
	}
}

// job calls the job tool, which must succeed.
func (p *proc) job(args map[string]any) tools.JobResult {
	p.t.Helper()
	var out tools.JobResult
	p.tool("job", args, &out)
	return out
}

// pageJob reads a job's stream back whole, page by page, as base64.
func (p *proc) pageJob(id, stream string, limit int) []byte {
	p.t.Helper()
	var all []byte
	for offset := int64(0); ; {
		page := p.job(map[string]any{"action": "output", "id": id, "stream": stream, "offset": offset, "limit": limit, "encoding": "base64"})
		b, err := base64.StdEncoding.DecodeString(page.Data)
		if err != nil {
			p.t.Fatal(err)
		}
		all = append(all, b...)
		if page.Next <= offset {
			return all
		}
		offset = page.Next
	}
}

// waitJob waits for a job to exit and returns it.
func (p *proc) waitJob(id string, within time.Duration) *tools.JobView {
	p.t.Helper()
	var j *tools.JobView
	waitUntil(p.t, within, "job "+id+" to exit", func() bool {
		j = p.job(map[string]any{"action": "status", "id": id}).Job
		return j.State == "exited"
	})
	return j
}

// TestCommandLongerThanTwoMinutes runs a 150-second command in the
// foreground with progress: it completes, and no 5 s pass without a
// notification.
func TestCommandLongerThanTwoMinutes(t *testing.T) {
	t.Parallel() // it mostly waits: see the package doc
	eachJobTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr})
		p.container() // the gaps measured are the command's, not the container's making
		var mu sync.Mutex
		last, longest, count := time.Now(), time.Duration(0), 0
		p.client.OnNotification(func(n mcp.JSONRPCNotification) {
			if n.Method == "notifications/progress" {
				mu.Lock()
				longest, last, count = max(longest, time.Since(last)), time.Now(), count+1
				mu.Unlock()
			}
		})
		req := shellRequest("sh", "-c", "i=0; while [ $i -lt 75 ]; do echo tick $i; sleep 2; i=$((i+1)); done; echo finished")
		req.Params.Arguments = map[string]any{"command": req.Params.Arguments.(map[string]any)["command"], "timeout_seconds": 240}
		req.Params.Meta = &mcp.Meta{ProgressToken: "long-" + tr}
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		mu.Lock()
		last = time.Now()
		mu.Unlock()
		res, err := p.client.CallTool(ctx, req)
		if err != nil || res.IsError {
			t.Fatalf("a 150 s command: %v %v", err, res)
		}
		var out tools.ShellResult
		decodeStructured(t, res, &out)
		if out.ExitCode != 0 || out.TimedOut || !strings.HasSuffix(out.Stdout, "finished\n") || out.DurationMS < 150_000 {
			t.Errorf("exit %d, timed out %v, %d ms, stdout ends %q", out.ExitCode, out.TimedOut, out.DurationMS, out.Stdout[max(0, len(out.Stdout)-30):])
		}
		mu.Lock()
		defer mu.Unlock()
		if count < 25 || longest > 5*time.Second {
			t.Errorf("%d progress notifications, the longest gap %v; want one at least every 5 s", count, longest)
		}
	})
}

// TestGracefulStopOnTimeout: a command that handles SIGTERM cleans up
// within the grace; one that ignores it is killed after the grace, and the
// call returns within timeout + grace + 2 s with its whole tree gone.
func TestGracefulStopOnTimeout(t *testing.T) {
	eachJobTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr})
		handled := p.shell(map[string]any{"command": []string{"sh", "-c", "trap 'echo cleaning up; exit 0' TERM; echo started; while :; do sleep 0.1; done"},
			"timeout_seconds": 1, "grace_seconds": 5})
		if !handled.TimedOut || handled.ExitCode != 124 || handled.EndedBy != "SIGTERM" || !strings.Contains(handled.Stdout, "cleaning up") {
			t.Errorf("a command handling TERM: %+v", handled)
		}
		marker := fmt.Sprintf("7%04d", time.Now().UnixNano()%9973)
		begin := time.Now()
		ignored := p.shell(map[string]any{"command": []string{"sh", "-c", "trap '' TERM; (trap '' TERM; sleep " + marker + ") & setsid sleep " + marker + " & while :; do sleep 0.1; done"},
			"timeout_seconds": 1, "grace_seconds": 2})
		if took := time.Since(begin); ignored.EndedBy != "SIGKILL" || took > 5*time.Second {
			t.Errorf("a command ignoring TERM: ended by %q after %v, want SIGKILL within timeout + grace + 2 s", ignored.EndedBy, took)
		}
		if ps := p.run("ps", "-o", "args").Stdout; strings.Contains(ps, "sleep "+marker) {
			t.Errorf("processes left after the grace:\n%s", ps)
		}
	})
}

// TestBackgroundServerJob starts an HTTP server as a job, reaches it from
// later commands and stops it with a signal.
func TestBackgroundServerJob(t *testing.T) {
	eachJobTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr, image: pythonImage})
		p.tool("write_file", map[string]any{"file_path": "site/index.html", "content": "served by a job\n"}, &tools.WriteFileResult{})
		started := p.shell(map[string]any{"command": []string{"python3", "-u", "-m", "http.server", "8765", "--bind", "127.0.0.1", "-d", "site"}, "background": true})
		if started.Job == "" || started.JobState != "running" || !strings.Contains(started.Stdout, "Serving HTTP") {
			t.Fatalf("start: %+v", started)
		}
		get := []string{"python3", "-c", "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:8765/').read().decode(), end='')"}
		if got := p.run(get...); got.ExitCode != 0 || got.Stdout != "served by a job\n" {
			t.Fatalf("a later command reaching the job's server: %+v", got)
		}
		list := p.job(map[string]any{"action": "list"})
		if len(list.Jobs) != 1 || list.Jobs[0].ID != started.Job || list.Jobs[0].State != "running" {
			t.Errorf("list: %+v", list.Jobs)
		}
		if log := p.job(map[string]any{"action": "output", "id": started.Job, "stream": "stderr"}); !strings.Contains(log.Data, "GET / HTTP/1.1") {
			t.Errorf("the server's log: %q", log.Data)
		}
		stopped := p.job(map[string]any{"action": "signal", "id": started.Job, "signal": "TERM"})
		if stopped.Job.State != "exited" || stopped.Job.EndedBy != "SIGTERM" {
			t.Errorf("after TERM: %+v", stopped.Job)
		}
		if got := p.run(get...); got.ExitCode == 0 {
			t.Error("the server still answers after its job was signalled")
		}
	})
}

// TestJobOutputPagedBackWhole: a job that prints 5 MB is paged back byte
// for byte, by offset and by line, and a truncated foreground output is
// kept whole too.
func TestJobOutputPagedBackWhole(t *testing.T) {
	eachJobTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr})
		script := "i=0; while [ $i -lt 50000 ]; do printf 'line %06d %s\\n' $i 012345678901234567890123456789012345678901234567890123456789012345678901234567890123456; i=$((i+1)); done"
		var want bytes.Buffer
		for i := range 50000 {
			fmt.Fprintf(&want, "line %06d %s\n", i, "012345678901234567890123456789012345678901234567890123456789012345678901234567890123456")
		}
		started := p.shell(map[string]any{"command": []string{"sh", "-c", script}, "background": true})
		j := p.waitJob(started.Job, 60*time.Second)
		if *j.ExitCode != 0 || j.StdoutBytes != int64(want.Len()) || j.StdoutBytes < 5_000_000 {
			t.Fatalf("job: %+v, want exit 0 and %d bytes", j, want.Len())
		}
		if got := p.pageJob(started.Job, "stdout", 1<<20); !bytes.Equal(got, want.Bytes()) {
			t.Errorf("paged back %d bytes that differ from the %d printed", len(got), want.Len())
		}
		if line := p.job(map[string]any{"action": "output", "id": started.Job, "line": 41234, "limit": 12}); line.Data != "line 041234 " {
			t.Errorf("line 41234 starts %q", line.Data)
		}
		fg := p.shell(map[string]any{"command": []string{"sh", "-c", script + " | head -c 1000000"}})
		if !strings.HasSuffix(fg.Stdout, tools.TruncatedMarker) || fg.OutputJob == "" {
			t.Fatalf("a 1 MB foreground output: output_job %q, stdout ends %q", fg.OutputJob, fg.Stdout[len(fg.Stdout)-20:])
		}
		if got := p.pageJob(fg.OutputJob, "stdout", 300_000); !bytes.Equal(got, want.Bytes()[:1_000_000]) {
			t.Errorf("the kept foreground output: %d bytes that differ from the 1000000 printed", len(got))
		}
	})
}

// TestJobsEndWithTheSession: jobs running when the session ends die with
// it (the container goes; no process is left anywhere), and a job that
// handles SIGTERM gets to clean up first.
func TestJobsEndWithTheSession(t *testing.T) {
	eachJobTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr})
		marker := fmt.Sprintf("6%04d", time.Now().UnixNano()%9973)
		for range 3 {
			p.shell(map[string]any{"command": []string{"sh", "-c", "sleep " + marker + " & setsid sleep " + marker + " & wait"}, "background": true})
		}
		p.shell(map[string]any{"command": []string{"sh", "-c", "trap 'exit 0' TERM; while :; do sleep 0.1; done"}, "background": true})
		if running := hostProcessesMatching(t, "sleep "+marker); len(running) != 6 {
			t.Fatalf("%d job processes seen from the host before the end, want 6", len(running))
		}
		name := p.container()
		p.endSession()
		waitUntil(t, 30*time.Second, "the container to go", func() bool { return !containerExists(t, name) })
		if left := hostProcessesMatching(t, "sleep "+marker); len(left) > 0 {
			t.Errorf("job processes left on the host after the session ended: %v", left)
		}
	})
}

// hostProcessesMatching returns the pids of this machine's processes whose
// command line starts with prefix: a rootful container's processes are
// among them.
func hostProcessesMatching(t *testing.T, prefix string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, e := range entries {
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.HasPrefix(strings.ReplaceAll(string(cmdline), "\x00", " "), prefix) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// TestBinaryFileRoundTrip writes a 1 MiB file holding every byte value
// with write_file (base64), checks it from a command, and reads it back
// with read_file (base64) in pages.
func TestBinaryFileRoundTrip(t *testing.T) {
	eachJobTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr})
		data := make([]byte, 1<<20)
		for i := range data {
			data[i] = byte(i*7 + i/256)
		}
		var wrote tools.WriteFileResult
		p.tool("write_file", map[string]any{"file_path": "bin/all.bytes", "content": base64.StdEncoding.EncodeToString(data), "encoding": "base64"}, &wrote)
		if wrote.SizeBytes != int64(len(data)) {
			t.Fatalf("wrote %d bytes, want %d", wrote.SizeBytes, len(data))
		}
		sum := p.run("sh", "-c", "od -An -tu1 -v bin/all.bytes | tr -s ' ' '\\n' | sort -un | wc -l").Stdout
		if strings.TrimSpace(sum) != "256" {
			t.Errorf("the file holds %s distinct byte values, want 256", strings.TrimSpace(sum))
		}
		var back []byte
		for offset := int64(0); offset < int64(len(data)); {
			var page tools.ReadFileResult
			p.tool("read_file", map[string]any{"file_path": "bin/all.bytes", "encoding": "base64", "byte_offset": offset, "byte_limit": 300_000}, &page)
			b, err := base64.StdEncoding.DecodeString(page.Content)
			if err != nil || page.SizeBytes != int64(len(data)) || page.NextByte != offset+int64(len(b)) || len(b) == 0 {
				t.Fatalf("page at %d: %d bytes, next %d, size %d, err %v", offset, len(b), page.NextByte, page.SizeBytes, err)
			}
			back, offset = append(back, b...), page.NextByte
		}
		if !bytes.Equal(back, data) {
			t.Error("the bytes read back differ from the bytes written")
		}
		if msg := p.toolErr("read_file", map[string]any{"file_path": "bin/all.bytes"}); !strings.Contains(msg, "encoding=base64") && !strings.Contains(msg, "not UTF-8") {
			t.Errorf("a text read of a binary file: %s", msg)
		}
	})
}

// TestJobBadInputs: each new argument's bad values, through the real
// server, get a tool error naming the field or the job, and change nothing.
func TestJobBadInputs(t *testing.T) {
	p := start(t, startOptions{})
	for _, tt := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"podman_shell", map[string]any{"command": []string{"true"}, "timeout_seconds": 1801}, "timeout_seconds: must be at most 1800"},
		{"podman_shell", map[string]any{"command": []string{"true"}, "grace_seconds": 31}, "grace_seconds: must be at most 30"},
		{"podman_shell", map[string]any{"command": []string{"true"}, "background": true, "capture_output": false}, "capture_output: a background job always keeps its output"},
		{"podman_shell", map[string]any{"command": []string{"no-such-program"}, "background": true}, "no-such-program"},
		{"job", map[string]any{"action": "status", "id": "0a0a0a-1"}, "no job \"0a0a0a-1\""},
		{"job", map[string]any{"action": "signal", "id": "0a0a0a-1", "signal": "STOP"}, "signal"},
		{"job", map[string]any{"action": "output", "id": "0a0a0a-1", "limit": 2 << 20}, "limit: must be at most 1048576"},
		{"read_file", map[string]any{"file_path": "missing.bin", "encoding": "base64"}, "missing.bin"},
		{"write_file", map[string]any{"file_path": "x.bin", "content": "%%%", "encoding": "base64"}, "content: is not standard base64"},
	} {
		if msg := p.toolErr(tt.tool, tt.args); !strings.Contains(msg, tt.want) {
			t.Errorf("%s %v: %q, want it to name %q", tt.tool, tt.args, msg, tt.want)
		}
	}
	done := p.shell(map[string]any{"command": []string{"true"}, "background": true})
	p.waitJob(done.Job, 10*time.Second)
	if msg := p.toolErr("job", map[string]any{"action": "input", "id": done.Job, "input": "x"}); !strings.Contains(msg, "has no open stdin") {
		t.Errorf("input to an ended job: %q", msg)
	}
	if ls := p.run("ls", "-A", "/workspace").Stdout; ls != "" {
		t.Errorf("rejected calls left files: %q", ls)
	}
}
