//go:build linux

package agent

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/wire"
)

// runPython runs args on a new agent and returns the result and the workspace.
func runPython(t *testing.T, args wire.PythonArgs) (wire.PythonResult, string, error) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 on this host; the integration tests run evaluate_python in the workspace image")
	}
	c, ws := startAgent(t)
	if args.TimeoutMillis == 0 {
		args.TimeoutMillis = 10_000
	}
	if args.OutputChars == 0 {
		args.OutputChars = 4096
	}
	res, err := do[wire.PythonResult](t, c, wire.OpPython, args)
	return res, ws, err
}

func TestPythonValueOutputAndGlobals(t *testing.T) {
	res, _, err := runPython(t, wire.PythonArgs{
		Code:    "import math\ntotal = sum(range(n))\nprint('total', total)\ntotal * 2",
		Globals: map[string]string{"n": "5", "label": `"x"`},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Ok || res.ValueRepr == nil || *res.ValueRepr != "20" || res.Stdout != "total 10\n" || res.Stderr != "" {
		t.Errorf("result %+v", res)
	}
	if res.Globals["total"] != "10" || res.Globals["label"] != `"x"` || res.Globals["math"] != "" {
		t.Errorf("globals %v: want total and label, not the module", res.Globals)
	}
}

func TestPythonExceptionIsAResult(t *testing.T) {
	res, ws, err := runPython(t, wire.PythonArgs{
		Code:   "x = 1\nraise ValueError('boom')",
		Writes: []wire.PythonWrite{{Path: "never.txt", Content: "no", Mode: wire.WriteCreate}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ok || !strings.Contains(res.Stderr, "ValueError: boom") || len(res.Writes) != 0 || fileExists(filepath.Join(ws, "never.txt")) {
		t.Errorf("result %+v", res)
	}
	syntax, _, err := runPython(t, wire.PythonArgs{Code: "def ("})
	if err != nil || syntax.Ok || !strings.Contains(syntax.Stderr, "SyntaxError") {
		t.Errorf("syntax error: %+v, %v", syntax, err)
	}
}

func TestPythonReadsAndWrites(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 on this host")
	}
	c, ws := startAgent(t)
	mustWrite(t, filepath.Join(ws, "in.txt"), "3\n4\n")
	mustWrite(t, filepath.Join(ws, "log.txt"), "start\n")
	res, err := do[wire.PythonResult](t, c, wire.OpPython, wire.PythonArgs{
		Code:  "nums = [int(x) for x in reads['in.txt'].split()]\nresult = sum(nums)",
		Reads: []string{"in.txt"},
		Writes: []wire.PythonWrite{
			{Path: "out/sum.txt", Content: "sum={result} json={\"k\": 1} {missing}", Mode: wire.WriteCreate},
			{Path: "log.txt", Content: "done {result}\n", Mode: wire.WriteAppend},
			{Path: "in.txt", Content: "x", Mode: wire.WriteCreate},
			{Path: "absent.txt", Content: "x", Mode: wire.WriteOverwrite},
		},
		TimeoutMillis: 10_000, OutputChars: 4096,
	})
	if err != nil {
		t.Fatal(err)
	}
	if readHost(t, filepath.Join(ws, "out/sum.txt")) != `sum=7 json={"k": 1} {missing}` || readHost(t, filepath.Join(ws, "log.txt")) != "start\ndone 7\n" {
		t.Errorf("files: %q %q", readHost(t, filepath.Join(ws, "out/sum.txt")), readHost(t, filepath.Join(ws, "log.txt")))
	}
	w := res.Writes
	if len(w) != 4 || !w[0].Applied || !w[1].Applied || w[2].Applied || !strings.Contains(w[2].Error, "exists") || w[3].Applied || !strings.Contains(w[3].Error, "does not exist") {
		t.Errorf("writes %+v", w)
	}
	if len(res.Reads) != 1 || res.Reads[0].SizeBytes != 4 {
		t.Errorf("reads %+v", res.Reads)
	}
	_, err = do[wire.PythonResult](t, c, wire.OpPython, wire.PythonArgs{Code: "1", Reads: []string{"missing.txt"}, TimeoutMillis: 1000, OutputChars: 10})
	wantErr(t, err, `reads: "missing.txt" does not exist`)
}

func TestPythonTimeoutAndCaps(t *testing.T) {
	res, _, err := runPython(t, wire.PythonArgs{Code: "import subprocess\nsubprocess.Popen(['sleep', '307'])\nwhile True: pass", TimeoutMillis: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.Ok || !strings.Contains(res.Stderr, "stopped the code after 1000 ms") {
		t.Errorf("timeout: %+v", res)
	}
	assertNoProcess(t, "sleep 307")
	long, _, err := runPython(t, wire.PythonArgs{Code: "print('x' * 10000)\n'y' * 10000", OutputChars: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(long.Stdout, "[truncated]") || len(long.Stdout) > 4096+20 || len(*long.ValueRepr) != 4096 {
		t.Errorf("caps: stdout %d chars, value_repr %d", len(long.Stdout), len(*long.ValueRepr))
	}
}

func TestPythonMissing(t *testing.T) {
	c, _ := startAgent(t)
	t.Setenv("PATH", t.TempDir())
	_, err := do[wire.PythonResult](t, c, wire.OpPython, wire.PythonArgs{Code: "1", TimeoutMillis: 1000, OutputChars: 10})
	wantErr(t, err, "python3 is not installed")
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
