package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/tools"
)

// tool calls a tool that must succeed and decodes its result into out.
func (p *proc) tool(name string, args map[string]any, out any) {
	p.t.Helper()
	res := p.call(name, args)
	if res.IsError {
		p.t.Fatalf("%s %v failed: %s", name, args, textOf(res))
	}
	decodeStructured(p.t, res, out)
}

// toolErr calls a tool that must fail and returns its message.
func (p *proc) toolErr(name string, args map[string]any) string {
	p.t.Helper()
	res := p.call(name, args)
	if !res.IsError {
		p.t.Fatalf("%s %v succeeded; want an error", name, args)
	}
	return textOf(res)
}

func TestFileToolsAndShellSeeEachOthersWrites(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr string) {
		fileToolsScenario(t, start(t, startOptions{transport: tr}))
	})
}

// fileToolsScenario drives every file tool and the shell over one session.
func fileToolsScenario(t *testing.T, p *proc) {
	t.Helper()
	var w tools.WriteFileResult
	p.tool("write_file", map[string]any{"file_path": "src/hello.txt", "content": "from the tool\n"}, &w)
	if !w.Created || w.Version != 1 || w.SizeBytes != 14 {
		t.Errorf("write_file: %+v", w)
	}
	if res := p.run("cat", "src/hello.txt"); res.Stdout != "from the tool\n" {
		t.Errorf("the shell reads %q", res.Stdout)
	}
	p.run("sh", "-c", "echo from the shell >> src/hello.txt")
	var r tools.ReadFileResult
	p.tool("read_file", map[string]any{"file_path": "src/hello.txt"}, &r)
	if r.Content != "from the tool\nfrom the shell\n" || r.TotalLines != 2 {
		t.Errorf("read_file after the shell wrote: %+v", r)
	}
	var e tools.EditFileResult
	p.tool("edit_file", map[string]any{"file_path": "src/hello.txt", "old_string": "the shell", "new_string": "podman_shell"}, &e)
	// Version 3: the tool's write, the shell's append (the watch saw it), this edit.
	if e.Version != 3 || e.Replacements != 1 {
		t.Errorf("edit_file: %+v", e)
	}
	if res := p.run("cat", "src/hello.txt"); res.Stdout != "from the tool\nfrom podman_shell\n" {
		t.Errorf("after the edit the shell reads %q", res.Stdout)
	}
	var ls tools.LsResult
	p.tool("ls", map[string]any{"path": "src"}, &ls)
	if len(ls.Entries) != 1 || ls.Entries[0].Name != "hello.txt" || ls.Entries[0].SizeBytes != 32 {
		t.Errorf("ls: %+v", ls)
	}
	var rm tools.RmResult
	p.tool("rm", map[string]any{"path": "src"}, &rm)
	if rm.RemovedEntries != 2 {
		t.Errorf("rm: %+v", rm)
	}
	if res := p.run("ls", "-A"); res.Stdout != "" {
		t.Errorf("after rm the shell sees %q", res.Stdout)
	}
}

// TestEscapesAreRefused plants links out of /workspace from the shell and
// tries every file tool through them; nothing outside may be read or changed.
func TestEscapesAreRefused(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr string) {
		hostCanary := filepath.Join(t.TempDir(), "host-canary.txt")
		if err := os.WriteFile(hostCanary, []byte("host-secret"), 0o644); err != nil {
			t.Fatal(err)
		}
		p := start(t, startOptions{transport: tr, image: pythonImage}) // evaluate_python must get as far as its reads
		p.run("sh", "-c", "echo container-secret > /tmp/canary; mkdir /tmp/outside; "+
			"ln -s / escape; ln -s /proc/self/root rootlink; ln -s /tmp tmplink; ln -s "+hostCanary+" hostlink; ln -s .. up; mkfifo fifo")
		refusals := []struct {
			tool string
			args map[string]any
			want string
		}{
			{tool: "read_file", args: map[string]any{"file_path": "escape/etc/passwd"}, want: "leads outside /workspace"},
			{tool: "read_file", args: map[string]any{"file_path": "rootlink/tmp/canary"}, want: "leads outside /workspace"},
			{tool: "read_file", args: map[string]any{"file_path": "tmplink/canary"}, want: "leads outside /workspace"},
			{tool: "read_file", args: map[string]any{"file_path": "hostlink"}, want: "leads outside /workspace"},
			{tool: "read_file", args: map[string]any{"file_path": "up/x"}, want: "leads outside /workspace"},
			{tool: "read_file", args: map[string]any{"file_path": "fifo"}, want: "not a regular file (a fifo)"},
			{tool: "write_file", args: map[string]any{"file_path": "tmplink/outside/new.txt", "content": "x"}, want: "leads outside /workspace"},
			{tool: "write_file", args: map[string]any{"file_path": "hostlink", "content": "x"}, want: "is a symbolic link"},
			{tool: "edit_file", args: map[string]any{"file_path": "tmplink/canary", "old_string": "container", "new_string": "x"}, want: "leads outside /workspace"},
			{tool: "ls", args: map[string]any{"path": "tmplink/outside"}, want: "leads outside /workspace"},
			{tool: "glob", args: map[string]any{"pattern": "*", "path": "escape/etc"}, want: "leads outside /workspace"},
			{tool: "grep", args: map[string]any{"pattern": "secret", "path": "tmplink"}, want: "leads outside /workspace"},
			{tool: "rm", args: map[string]any{"path": "tmplink/canary"}, want: "leads outside /workspace"},
			{tool: "podman_shell", args: map[string]any{"command": []string{"true"}, "cwd": "escape/etc"}, want: "leads outside the workspace"},
			{tool: "evaluate_python", args: map[string]any{"code": "1", "reads": []map[string]string{{"path": "hostlink"}}}, want: "leads outside /workspace"},
		}
		for _, r := range refusals {
			if msg := p.toolErr(r.tool, r.args); !strings.Contains(msg, r.want) {
				t.Errorf("%s %v: %q, want %q", r.tool, r.args, msg, r.want)
			}
		}
		var grep tools.GrepResult
		p.tool("grep", map[string]any{"pattern": "secret"}, &grep)
		if len(grep.Matches) != 0 {
			t.Errorf("grep found secrets through links: %+v", grep.Matches)
		}
		var ls tools.LsResult
		p.tool("ls", map[string]any{}, &ls)
		kinds := map[string]string{}
		for _, e := range ls.Entries {
			kinds[e.Name] = e.Kind + " " + e.LinkTarget
		}
		if kinds["escape"] != "symlink /" || kinds["fifo"] != "other " {
			t.Errorf("ls kinds %v", kinds)
		}
		var rm tools.RmResult
		p.tool("rm", map[string]any{"path": "tmplink"}, &rm)
		if res := p.run("sh", "-c", "cat /tmp/canary; ls -A /tmp/outside"); res.Stdout != "container-secret\n" {
			t.Errorf("outside /workspace changed: %q", res.Stdout)
		}
		if b, err := os.ReadFile(hostCanary); err != nil || string(b) != "host-secret" {
			t.Errorf("host canary: %q %v", b, err)
		}
	})
}

func TestRejectedWritesLeaveTheOldFile(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr})
		p.tool("write_file", map[string]any{"file_path": "keep.txt", "content": "original\n"}, &tools.WriteFileResult{})
		for _, args := range []map[string]any{
			{"file_path": "keep.txt", "content": strings.Repeat("a", 48001)},
			{"file_path": "keep.txt", "content": "x", "extra": true},
		} {
			p.toolErr("write_file", args)
		}
		p.toolErr("edit_file", map[string]any{"file_path": "keep.txt", "old_string": "original", "new_string": strings.Repeat("b", 48000)})
		if res := p.run("sh", "-c", "cat keep.txt; ls -A"); res.Stdout != "original\nkeep.txt\n" {
			t.Errorf("after rejected writes: %q", res.Stdout)
		}
	})
}

func TestEditFile(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr})
		p.run("sh", "-c", `printf 'one\r\ntwo\r\nthree\r\n' > crlf.txt; printf 'x\ny\nx\nz\nx\n' > many.txt`)
		p.tool("edit_file", map[string]any{"file_path": "crlf.txt", "old_string": "one\ntwo", "new_string": "1\n2"}, &tools.EditFileResult{})
		if res := p.run("od", "-c", "crlf.txt"); !strings.Contains(res.Stdout, `1  \r  \n   2  \r  \n   t   h   r   e   e  \r  \n`) {
			t.Errorf("CRLF not kept:\n%s", res.Stdout)
		}
		if msg := p.toolErr("edit_file", map[string]any{"file_path": "many.txt", "old_string": "x", "new_string": "w"}); !strings.Contains(msg, "occurs 3 times") || !strings.Contains(msg, "lines 1, 3, 5") {
			t.Errorf("ambiguous edit: %q", msg)
		}
		var e tools.EditFileResult
		p.tool("edit_file", map[string]any{"file_path": "many.txt", "old_string": "x", "new_string": "w", "replace_all": true}, &e)
		if e.Replacements != 3 {
			t.Errorf("replace_all: %+v", e)
		}
	})
}

func TestReadFileRefusesBinaryAndPages(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr})
		p.run("sh", "-c", `printf '\177ELF\001\377\376\000' > prog; seq 1 5000 > long.txt`)
		if msg := p.toolErr("read_file", map[string]any{"file_path": "prog"}); !strings.Contains(msg, "not UTF-8 text (a binary file of 8 bytes)") || !strings.Contains(msg, "base64") {
			t.Errorf("binary: %q", msg)
		}
		res := p.call("read_file", map[string]any{"file_path": "long.txt", "offset": 2000, "limit": 3})
		if res.IsError || !strings.HasPrefix(textOf(res), "lines 2001-2003 of 5000 in long.txt (read more with offset 2003)\n  2001\t2001\n") {
			t.Errorf("paged read: %q", textOf(res))
		}
	})
}

func TestResultsTruncateAt2000(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr})
		p.run("sh", "-c", "mkdir many && cd many && i=0; while [ $i -lt 2100 ]; do echo needle > f$i.txt; i=$((i+1)); done")
		var ls tools.LsResult
		p.tool("ls", map[string]any{"path": "many"}, &ls)
		var glob tools.GlobResult
		p.tool("glob", map[string]any{"pattern": "**/*.txt"}, &glob)
		var grep tools.GrepResult
		p.tool("grep", map[string]any{"pattern": "needle"}, &grep)
		if len(ls.Entries) != 2000 || !ls.Truncated || ls.Total != 2100 {
			t.Errorf("ls: %d entries, truncated %v, total %d", len(ls.Entries), ls.Truncated, ls.Total)
		}
		if len(glob.Matches) != 2000 || !glob.Truncated || glob.Note == "" {
			t.Errorf("glob: %d matches, truncated %v", len(glob.Matches), glob.Truncated)
		}
		if len(grep.Matches) != 2000 || !grep.Truncated {
			t.Errorf("grep: %d matches, truncated %v", len(grep.Matches), grep.Truncated)
		}
	})
}

func TestEvaluatePython(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr, image: pythonImage})
		p.run("sh", "-c", "printf '1\\n2\\n3\\n' > nums.txt")
		var r tools.PythonResult
		p.tool("evaluate_python", map[string]any{
			"code":    "vals = [int(x) for x in reads['nums.txt'].split()]\nprint('n =', len(vals))\ntotal = sum(vals) * factor\ntotal",
			"globals": map[string]string{"factor": "10"},
			"reads":   []map[string]string{{"path": "nums.txt"}},
			"writes":  []map[string]string{{"path": "out/total.txt", "content": "total={total}\n"}},
		}, &r)
		if !r.Succeeded || r.ValueRepr == nil || *r.ValueRepr != "60" || r.Stdout != "n = 3\n" || r.Globals["total"] != "60" || !r.Writes[0].Applied {
			t.Errorf("result %+v", r)
		}
		if res := p.run("cat", "out/total.txt"); res.Stdout != "total=60\n" {
			t.Errorf("written file: %q", res.Stdout)
		}
		var failed tools.PythonResult
		p.tool("evaluate_python", map[string]any{"code": "1/0", "writes": []map[string]string{{"path": "never.txt", "content": "x"}}}, &failed)
		if failed.Succeeded || !strings.Contains(failed.Stderr, "ZeroDivisionError") || len(failed.Writes) != 0 {
			t.Errorf("exception: %+v", failed)
		}
		var slow tools.PythonResult
		p.tool("evaluate_python", map[string]any{"code": "while True:\n    pass"}, &slow)
		if !slow.TimedOut || slow.Succeeded {
			t.Errorf("timeout: %+v", slow)
		}
		if res := p.run("sh", "-c", "ls never.txt 2>&1; ps -o args | grep -c [p]ython3"); !strings.Contains(res.Stdout, "No such file") || !strings.HasSuffix(res.Stdout, "0\n") {
			t.Errorf("after failures: %q", res.Stdout)
		}
	})
}

func TestEvaluatePythonWithoutPython(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr})
		msg := p.toolErr("evaluate_python", map[string]any{"code": "1"})
		if !strings.Contains(msg, "needs python3, and the image "+testImage+" has none") {
			t.Errorf("message %q", msg)
		}
	})
}
