//go:build linux

package agent

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"time"
	"unicode/utf8"

	"github.com/wink-mcp/wink-mcp/wire"
)

// runnerSource is the Python program that runs evaluate_python's code.
//
//go:embed runner.py
var runnerSource string

// maxReadsBytes bounds the files evaluate_python loads for one run.
const maxReadsBytes = 4 << 20

// runnerResult is what runner.py writes to its descriptor 3.
type runnerResult struct {
	Ok        bool              `json:"ok"`
	ValueRepr *string           `json:"value_repr"`
	Globals   map[string]string `json:"globals"`
	Writes    []string          `json:"writes"`
}

// python answers OpPython: it runs the code with python3 in the workspace,
// REPL style (the last expression's repr is the value), and applies the
// requested writes only if the code succeeded. The files are read and
// written by the agent, inside the workspace root, not by Python.
func (a *Agent) python(ctx context.Context, args wire.PythonArgs, report func(wire.Progress)) (*wire.PythonResult, *wire.Error) {
	interpreter, err := exec.LookPath("python3")
	if err != nil {
		return nil, wire.Errorf(wire.CodeUnavailable, "python3 is not installed in this container's image")
	}
	reads := make(map[string]string, len(args.Reads))
	refs := make([]wire.FileRef, 0, len(args.Reads))
	total := 0
	for _, p := range args.Reads {
		text, werr := a.files.readText(p)
		if werr != nil {
			return nil, wire.Errorf(werr.Code, "reads: %s", werr.Message)
		}
		if total += len(text); total > maxReadsBytes {
			return nil, wire.Errorf(wire.CodeInvalid, "reads: the files total more than %d bytes; open large files from the code instead (they are under /workspace)", maxReadsBytes)
		}
		reads[p] = text
		refs = append(refs, wire.FileRef{Path: p, SizeBytes: int64(len(text))})
	}
	globals := make(map[string]json.RawMessage, len(args.Globals))
	for name, value := range args.Globals {
		if !json.Valid([]byte(value)) {
			return nil, wire.Errorf(wire.CodeInvalid, "globals.%s: %q is not JSON; give each value JSON-encoded (a string is \"\\\"text\\\"\")", name, value)
		}
		globals[name] = json.RawMessage(value)
	}
	templates := make([]string, len(args.Writes))
	for i, w := range args.Writes {
		templates[i] = w.Content
	}
	payload, err := json.Marshal(map[string]any{"code": args.Code, "globals": globals, "reads": reads, "writes": templates})
	if err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "encoding the payload: %v", err)
	}

	var result bytes.Buffer
	out, werr := a.run(ctx, runSpec{
		argv: []string{interpreter, "-I", "-c", runnerSource}, dir: a.workspace, env: os.Environ(), stdin: string(payload),
		timeout: time.Duration(args.TimeoutMillis) * time.Millisecond, grace: time.Duration(args.GraceMillis) * time.Millisecond, capture: true, limit: args.OutputChars * utf8.UTFMax, result: &result,
		progress: progressIf(args.Progress, report),
	})
	if werr != nil {
		return nil, werr
	}
	res := &wire.PythonResult{Globals: map[string]string{}, Reads: refs, Writes: []wire.WriteOutcome{}, TimedOut: out.timedOut, DiskFull: a.disks.report(out.full)}
	res.Stdout = capChars(out.stdout, args.OutputChars)
	res.Stderr = withNotes(capChars(out.stderr, args.OutputChars), out.notes)
	var r runnerResult
	switch {
	case out.timedOut:
		res.Stderr += fmt.Sprintf("\n[evaluate_python stopped the code after %d ms]", args.TimeoutMillis)
		return res, nil
	case json.Unmarshal(result.Bytes(), &r) != nil:
		res.Stderr += fmt.Sprintf("\n[python3 ended (exit %d) before reporting a result]", out.exitCode)
		return res, nil
	}
	res.Ok = r.Ok
	if r.ValueRepr != nil {
		v := cutChars(*r.ValueRepr, args.OutputChars)
		res.ValueRepr = &v
	}
	if r.Globals != nil {
		res.Globals = r.Globals
	}
	if r.Ok && len(r.Writes) == len(args.Writes) {
		for i, w := range args.Writes {
			res.Writes = append(res.Writes, a.files.applyWrite(w, r.Writes[i]))
		}
	}
	return res, nil
}

// applyWrite writes one file evaluate_python asked for, with its mode's rule.
func (ops *fileOps) applyWrite(w wire.PythonWrite, content string) wire.WriteOutcome {
	o := wire.WriteOutcome{Path: w.Path, Mode: w.Mode}
	fail := func(format string, args ...any) wire.WriteOutcome {
		o.Error = fmt.Sprintf(format, args...)
		return o
	}
	if w.Path == "" {
		return fail("the path names the workspace root, not a file")
	}
	seq, done := ops.mutations.begin()
	defer done()
	defer func() { ops.watch.own(o.Applied, w.Path) }()
	if w.Mode == wire.WriteCreate {
		if werr := ops.makeParents(w.Path); werr != nil {
			return fail("%s", werr.Message)
		}
	}
	perm, exists, werr := ops.writable(w.Path)
	switch {
	case werr != nil:
		return fail("%s", werr.Message)
	case w.Mode == wire.WriteCreate && exists:
		return fail("%q exists; use mode overwrite or append", w.Path)
	case w.Mode != wire.WriteCreate && !exists:
		return fail("%q does not exist; use mode create", w.Path)
	}
	var read fs.FileInfo
	if w.Mode == wire.WriteAppend {
		old, fi, werr := ops.readTextInfo(w.Path)
		if werr != nil {
			return fail("%s", werr.Message)
		}
		content, read = old+content, fi
	}
	if n := utf8.RuneCountInString(content); n > wire.MaxFileChars {
		return fail("the content would be %d characters; the limit is %d", n, wire.MaxFileChars)
	}
	if werr := ops.replaceFile(w.Path, []byte(content), perm, read); werr != nil {
		return fail("%s", werr.Message)
	}
	o.Applied, o.SizeBytes, o.Seq = true, int64(len(content)), seq
	return o
}

// capChars returns a captured stream cut to n characters, with a marker when cut.
func capChars(c *capture, n int) string {
	text, truncated := c.text()
	if cut := cutChars(text, n); cut != text || truncated {
		return cut + "\n[truncated]"
	}
	return text
}

// cutChars keeps the first n characters of s.
func cutChars(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}
