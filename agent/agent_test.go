//go:build linux

package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/wire"
)

// TestMain lets the test binary act as the supervisor the agent re-executes,
// and as a command that holds inotify descriptors (see holdInotify).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "supervise" {
		os.Exit(SuperviseMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "hold-inotify" {
		os.Exit(holdInotify(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// startAgent serves a new agent on a temp workspace and returns a client to it.
func startAgent(t *testing.T) (*wire.Client, string) {
	t.Helper()
	dir := t.TempDir()
	return startAgentIn(t, dir), dir
}

// startAgentIn serves a new agent on the workspace dir and returns a client to it.
func startAgentIn(t *testing.T, dir string) *wire.Client {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{Workspace: dir, Self: self})
	if err != nil {
		t.Fatal(err)
	}
	serverSide, clientSide := net.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- a.ServeConn(ctx, serverSide) }()
	t.Cleanup(func() {
		cancel()
		clientSide.Close()
		serverSide.Close()
		<-served
		a.Close()
	})
	return wire.NewClient(clientSide, clientSide)
}

func run(t *testing.T, c *wire.Client, args wire.ExecArgs) (*wire.ExecResult, error) {
	t.Helper()
	if args.TimeoutMillis == 0 {
		args.TimeoutMillis = 10_000
	}
	if args.OutputLimit == 0 {
		args.OutputLimit = 32 << 10
	}
	var res wire.ExecResult
	err := c.Call(context.Background(), wire.OpExec, args, &res)
	return &res, err
}

func TestPing(t *testing.T) {
	c, _ := startAgent(t)
	var res wire.PingResult
	if err := c.Call(context.Background(), wire.OpPing, nil, &res); err != nil {
		t.Fatal(err)
	}
	if res.PID != os.Getpid() {
		t.Errorf("ping pid = %d, want %d", res.PID, os.Getpid())
	}
}

func TestExecResults(t *testing.T) {
	c, dir := startAgent(t)
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		args       wire.ExecArgs
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "echo", args: wire.ExecArgs{Argv: []string{"echo", "hi"}, Capture: true}, wantStdout: "hi\n"},
		{name: "exit code", args: wire.ExecArgs{Argv: []string{"sh", "-c", "exit 3"}, Capture: true}, wantCode: 3},
		{name: "stderr", args: wire.ExecArgs{Argv: []string{"sh", "-c", "echo oops >&2"}, Capture: true}, wantStderr: "oops\n"},
		{name: "signal", args: wire.ExecArgs{Argv: []string{"sh", "-c", "kill -9 $$"}, Capture: true}, wantCode: 137},
		{name: "cwd", args: wire.ExecArgs{Argv: []string{"pwd"}, Dir: "sub", Capture: true}, wantStdout: filepath.Join(dir, "sub") + "\n"},
		{name: "env merged", args: wire.ExecArgs{Argv: []string{"sh", "-c", `echo "$WINK_X:$PATH"`}, Env: map[string]string{"WINK_X": "1"}, Capture: true},
			wantStdout: "1:" + os.Getenv("PATH") + "\n"},
		{name: "stdin exact", args: wire.ExecArgs{Argv: []string{"cat"}, Stdin: "a\x00b\x10\x11c\r\n€", Capture: true}, wantStdout: "a\x00b\x10\x11c\r\n€"},
		{name: "capture off", args: wire.ExecArgs{Argv: []string{"echo", "hidden"}, Capture: false}},
		{name: "commands are the OOM killer's first choice", args: wire.ExecArgs{Argv: []string{"cat", "/proc/self/oom_score_adj"}, Capture: true}, wantStdout: "1000\n"},
		{name: "kill 0 spares the supervisor", args: wire.ExecArgs{Argv: []string{"sh", "-c", "echo before; kill 0"}, Capture: true},
			wantCode: 143, wantStdout: "before\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := run(t, c, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != tt.wantCode || res.Stdout != tt.wantStdout || res.Stderr != tt.wantStderr {
				t.Errorf("got code %d stdout %q stderr %q; want %d %q %q", res.ExitCode, res.Stdout, res.Stderr, tt.wantCode, tt.wantStdout, tt.wantStderr)
			}
		})
	}
}

func TestExecCaptureOffStillCounts(t *testing.T) {
	c, _ := startAgent(t)
	res, err := run(t, c, wire.ExecArgs{Argv: []string{"echo", "hidden"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout != "" || res.StdoutBytes != 7 {
		t.Errorf("stdout %q (%d bytes), want nothing kept and 7 counted", res.Stdout, res.StdoutBytes)
	}
}

func TestExecOutputCap(t *testing.T) {
	c, _ := startAgent(t)
	res, err := run(t, c, wire.ExecArgs{Argv: []string{"sh", "-c", "head -c 1048576 /dev/zero | tr '\\0' a"}, Capture: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stdout) != 32<<10 || !res.StdoutTruncated || res.StdoutBytes != 1<<20 {
		t.Errorf("kept %d bytes, truncated %v, total %d; want 32768, true, 1048576", len(res.Stdout), res.StdoutTruncated, res.StdoutBytes)
	}
}

func TestExecStartErrors(t *testing.T) {
	c, dir := startAgent(t)
	if err := os.WriteFile(filepath.Join(dir, "noexec.sh"), []byte("echo hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     wire.ExecArgs
		wantCode string
		wantMsg  string
	}{
		{name: "not found", args: wire.ExecArgs{Argv: []string{"no-such-command-xyz"}}, wantCode: wire.CodeNotFound, wantMsg: "command not found in PATH"},
		{name: "not executable", args: wire.ExecArgs{Argv: []string{"./noexec.sh"}}, wantCode: wire.CodeStartFailed, wantMsg: "permission denied"},
		{name: "missing cwd", args: wire.ExecArgs{Argv: []string{"true"}, Dir: "nope"}, wantCode: wire.CodeNotFound, wantMsg: `cwd "nope" does not exist`},
		{name: "cwd through symlink out", args: wire.ExecArgs{Argv: []string{"true"}, Dir: "escape/etc"}, wantCode: wire.CodeInvalid, wantMsg: "outside the workspace"},
		{name: "cwd is a file", args: wire.ExecArgs{Argv: []string{"true"}, Dir: "file"}, wantCode: wire.CodeInvalid, wantMsg: "not a directory"},
		{name: "empty argv", args: wire.ExecArgs{Argv: []string{}}, wantCode: wire.CodeBadRequest, wantMsg: "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := run(t, c, tt.args)
			var werr *wire.Error
			if !errors.As(err, &werr) || werr.Code != tt.wantCode || !strings.Contains(werr.Message, tt.wantMsg) {
				t.Errorf("error = %v, want code %s containing %q", err, tt.wantCode, tt.wantMsg)
			}
		})
	}
}

func TestExecTimeoutKillsWholeTree(t *testing.T) {
	c, _ := startAgent(t)
	marker := fmt.Sprint(900 + time.Now().UnixNano()%99)
	start := time.Now()
	res, err := run(t, c, wire.ExecArgs{
		Argv:          []string{"sh", "-c", "setsid sleep " + marker + ".1 & sleep " + marker + ".2 & sleep 30"},
		TimeoutMillis: 1000,
		Capture:       true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Errorf("returned after %v, want within timeout + 2 s", elapsed)
	}
	if !res.TimedOut || res.ExitCode != 124 {
		t.Errorf("timed_out %v exit %d, want true 124", res.TimedOut, res.ExitCode)
	}
	assertNoProcess(t, "sleep "+marker)
}

func TestExecExitKillsLeftovers(t *testing.T) {
	c, _ := startAgent(t)
	marker := fmt.Sprint(800 + time.Now().UnixNano()%99)
	res, err := run(t, c, wire.ExecArgs{Argv: []string{"sh", "-c", "setsid sleep " + marker + " & echo started"}, Capture: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || res.Stdout != "started\n" {
		t.Errorf("got %d %q", res.ExitCode, res.Stdout)
	}
	assertNoProcess(t, "sleep "+marker)
}

func TestExecCancel(t *testing.T) {
	c, _ := startAgent(t)
	marker := fmt.Sprint(700 + time.Now().UnixNano()%99)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	err := c.Call(ctx, wire.OpExec, wire.ExecArgs{Argv: []string{"sleep", marker}, TimeoutMillis: 60_000, OutputLimit: 1024}, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	waitNoProcess(t, "sleep "+marker, 2*time.Second)
}

// TestExecConcurrent proves requests run concurrently without timing
// anything: the first command waits for a file only the second creates, so
// an agent that served requests one at a time would never answer.
func TestExecConcurrent(t *testing.T) {
	c, _ := startAgent(t)
	first := make(chan *wire.ExecResult, 1)
	go func() {
		res, err := run(t, c, wire.ExecArgs{Argv: []string{"sh", "-c", "while [ ! -e go ]; do sleep 0.01; done; echo released"}, Capture: true})
		if err != nil {
			t.Error(err)
		}
		first <- res
	}()
	if _, err := run(t, c, wire.ExecArgs{Argv: []string{"touch", "go"}}); err != nil {
		t.Fatal(err)
	}
	if res := <-first; res.Stdout != "released\n" {
		t.Errorf("first command printed %q", res.Stdout)
	}
}

// waitNoProcess waits until no process's command line contains marker.
func waitNoProcess(t *testing.T, marker string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for processExists(marker) {
		if time.Now().After(deadline) {
			t.Fatalf("a process %q is still running", marker)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func assertNoProcess(t *testing.T, marker string) {
	t.Helper()
	if processExists(marker) {
		t.Errorf("a process %q survived", marker)
	}
}

func processExists(marker string) bool {
	procs, _ := readProcs()
	for _, p := range procs {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.pid))
		if err == nil && !p.zombie && strings.Contains(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})), marker) {
			return true
		}
	}
	return false
}

// TestSupervisorsAreReused checks that back-to-back commands run under the
// same supervisor, so they do not pay its start-up each time.
func TestSupervisorsAreReused(t *testing.T) {
	c, _ := startAgent(t)
	parents := map[string]bool{}
	for range 3 {
		res, err := run(t, c, wire.ExecArgs{Argv: []string{"sh", "-c", "echo $PPID"}, Capture: true})
		if err != nil {
			t.Fatal(err)
		}
		parents[res.Stdout] = true
	}
	if len(parents) != 1 {
		t.Errorf("three sequential commands had parents %v, want one supervisor", parents)
	}
}

// TestCommandKillingItsSupervisor gets a clear error, and the next command
// runs under a new supervisor.
func TestCommandKillingItsSupervisor(t *testing.T) {
	c, _ := startAgent(t)
	_, err := run(t, c, wire.ExecArgs{Argv: []string{"sh", "-c", "kill -9 $PPID; sleep 0.2"}, Capture: true})
	var werr *wire.Error
	if !errors.As(err, &werr) || !strings.Contains(werr.Message, "supervisor stopped") {
		t.Errorf("err = %v", err)
	}
	if res, err := run(t, c, wire.ExecArgs{Argv: []string{"echo", "again"}, Capture: true}); err != nil || res.Stdout != "again\n" {
		t.Errorf("next command: %+v, %v", res, err)
	}
}
