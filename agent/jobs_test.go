//go:build linux

package agent

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/wire"
)

func startJob(t *testing.T, c *wire.Client, script string, wait time.Duration) wire.JobStartResult {
	t.Helper()
	var res wire.JobStartResult
	if err := c.Call(context.Background(), wire.OpJobStart, wire.JobStartArgs{
		Exec: wire.ExecArgs{Argv: []string{"sh", "-c", script}}, WaitMillis: wait.Milliseconds(),
	}, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

func jobInfo(t *testing.T, c *wire.Client, id string) wire.JobInfo {
	t.Helper()
	var in wire.JobInfo
	if err := c.Call(context.Background(), wire.OpJobStatus, wire.JobArgs{ID: id}, &in); err != nil {
		t.Fatal(err)
	}
	return in
}

func waitJobExit(t *testing.T, c *wire.Client, id string) wire.JobInfo {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if in := jobInfo(t, c, id); in.State == wire.JobExited {
			return in
		}
	}
	t.Fatalf("job %s still running after 20 s", id)
	return wire.JobInfo{}
}

// pageAll reads a stream back page by page.
func pageAll(t *testing.T, c *wire.Client, id, stream string, limit int) []byte {
	t.Helper()
	var all []byte
	for offset := int64(0); ; {
		var res wire.JobOutputResult
		if err := c.Call(context.Background(), wire.OpJobOutput, wire.JobOutputArgs{ID: id, Stream: stream, Offset: offset, Limit: limit, Base64: true}, &res); err != nil {
			t.Fatal(err)
		}
		b, err := base64.StdEncoding.DecodeString(res.Chunk.Data)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
		if res.Chunk.Next == offset {
			return all
		}
		offset = res.Chunk.Next
	}
}

func TestJobOutputIsPagedBackWhole(t *testing.T) {
	c, _ := startAgent(t)
	job := startJob(t, c, "seq 1 700000; echo done >&2", 0)
	in := waitJobExit(t, c, job.Job.ID)
	want, err := exec.Command("seq", "1", "700000").Output()
	if err != nil {
		t.Fatal(err)
	}
	if *in.ExitCode != 0 || in.StdoutBytes != int64(len(want)) {
		t.Fatalf("exit %v, %d bytes, want 0, %d", *in.ExitCode, in.StdoutBytes, len(want))
	}
	if got := pageAll(t, c, job.Job.ID, "stdout", 1<<20); !bytes.Equal(got, want) {
		t.Errorf("paged back %d bytes that differ from the %d written", len(got), len(want))
	}
	var res wire.JobOutputResult
	if err := c.Call(context.Background(), wire.OpJobOutput, wire.JobOutputArgs{ID: job.Job.ID, Stream: "stdout", Line: 99999, Limit: 7}, &res); err != nil {
		t.Fatal(err)
	}
	if res.Chunk.Data != "100000\n" {
		t.Errorf("line 99999 reads %q, want 100000", res.Chunk.Data)
	}
}

func TestForegroundOutputPastTheLimitIsKept(t *testing.T) {
	c, _ := startAgent(t)
	res, err := run(t, c, wire.ExecArgs{Argv: []string{"sh", "-c", "seq 1 200000; echo err >&2"}, Capture: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.StdoutTruncated || res.OutputJob == "" {
		t.Fatalf("truncated %v, output job %q", res.StdoutTruncated, res.OutputJob)
	}
	want, _ := exec.Command("seq", "1", "200000").Output()
	if got := pageAll(t, c, res.OutputJob, "stdout", 256<<10); !bytes.Equal(got, want) {
		t.Errorf("kept %d bytes, want the %d written", len(got), len(want))
	}
	if got := pageAll(t, c, res.OutputJob, "stderr", 100); string(got) != "err\n" {
		t.Errorf("stderr kept %q", got)
	}
	small, _ := run(t, c, wire.ExecArgs{Argv: []string{"echo", "hi"}, Capture: true})
	if small.OutputJob != "" {
		t.Errorf("an output within the limit was kept as %s", small.OutputJob)
	}
}

func TestJobSignalTermThenKill(t *testing.T) {
	c, _ := startAgent(t)
	handles := startJob(t, c, "trap 'echo bye; exit 3' TERM; echo ready; while :; do sleep 0.05; done", 2*time.Second)
	if !strings.Contains(handles.Stdout.Data, "ready") {
		t.Fatalf("first output %q", handles.Stdout.Data)
	}
	var in wire.JobInfo
	if err := c.Call(context.Background(), wire.OpJobSignal, wire.JobSignalArgs{ID: handles.Job.ID, Signal: "TERM", GraceMillis: 3000}, &in); err != nil {
		t.Fatal(err)
	}
	if in.State != wire.JobExited || *in.ExitCode != 3 || in.EndedBy != "SIGTERM" {
		t.Errorf("a job handling TERM: %+v, want exited 3 by SIGTERM", in)
	}
	marker := fmt.Sprint(800 + time.Now().UnixNano()%99)
	ignores := startJob(t, c, "trap '' TERM; sleep "+marker+" & wait", time.Second)
	start := time.Now()
	if err := c.Call(context.Background(), wire.OpJobSignal, wire.JobSignalArgs{ID: ignores.Job.ID, Signal: "TERM", GraceMillis: 500}, &in); err != nil {
		t.Fatal(err)
	}
	if in.State != wire.JobExited || in.EndedBy != "SIGKILL" || time.Since(start) > 3*time.Second {
		t.Errorf("a job ignoring TERM: %+v after %v, want killed after the grace", in, time.Since(start))
	}
	assertNoProcess(t, "sleep "+marker)
}

func TestJobInputAndLimits(t *testing.T) {
	c, _ := startAgent(t)
	cat := startJob(t, c, "cat", 0)
	var got wire.JobInputResult
	if err := c.Call(context.Background(), wire.OpJobInput, wire.JobInputArgs{ID: cat.Job.ID, Data: "hello\n", Close: true}, &got); err != nil {
		t.Fatal(err)
	}
	waitJobExit(t, c, cat.Job.ID)
	if out := pageAll(t, c, cat.Job.ID, "stdout", 100); string(out) != "hello\n" {
		t.Errorf("cat echoed %q", out)
	}
	if err := c.Call(context.Background(), wire.OpJobInput, wire.JobInputArgs{ID: cat.Job.ID, Data: "x"}, &got); err == nil {
		t.Error("input to an ended job was accepted")
	}
	for range MaxRunningJobs {
		startJob(t, c, "sleep 60", 0)
	}
	var res wire.JobStartResult
	err := c.Call(context.Background(), wire.OpJobStart, wire.JobStartArgs{Exec: wire.ExecArgs{Argv: []string{"true"}}}, &res)
	if err == nil || !strings.Contains(err.Error(), "the most allowed") {
		t.Errorf("job %d: %v, want the limit named", MaxRunningJobs+1, err)
	}
	var stopped wire.JobListResult
	if err := c.Call(context.Background(), wire.OpJobStopAll, wire.JobStopAllArgs{GraceMillis: 500}, &stopped); err != nil {
		t.Fatal(err)
	}
	if stopped.Running != 0 {
		t.Errorf("%d jobs still running after stop-all", stopped.Running)
	}
	if err := c.Call(context.Background(), wire.OpJobStatus, wire.JobArgs{ID: "nope-1"}, &wire.JobInfo{}); err == nil || !strings.Contains(err.Error(), "recreated") {
		t.Errorf("unknown job: %v", err)
	}
}

func TestTimeoutGivesTheTreeAGrace(t *testing.T) {
	c, _ := startAgent(t)
	res, err := run(t, c, wire.ExecArgs{Argv: []string{"sh", "-c", "trap 'echo cleaned; exit 0' TERM; while :; do sleep 0.05; done"},
		TimeoutMillis: 500, GraceMillis: 2000, Capture: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.ExitCode != 124 || res.EndedBy != "SIGTERM" || !strings.Contains(res.Stdout, "cleaned") {
		t.Errorf("a command handling TERM: %+v", res)
	}
	start := time.Now()
	res, err = run(t, c, wire.ExecArgs{Argv: []string{"sh", "-c", "trap '' TERM; while :; do sleep 0.05; done"},
		TimeoutMillis: 500, GraceMillis: 1000, Capture: true})
	if err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); res.EndedBy != "SIGKILL" || elapsed > 500*time.Millisecond+time.Second+2*time.Second {
		t.Errorf("a command ignoring TERM: ended by %q after %v, want SIGKILL within timeout + grace + 2 s", res.EndedBy, elapsed)
	}
}
