//go:build linux

package agent

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/wire"
)

// TestConcurrentChangesToOnePathLoseNothing sends every kind of tool change
// to one file at once: every change that reports success must be in the
// file, and the sequence numbers must order them.
func TestConcurrentChangesToOnePathLoseNothing(t *testing.T) {
	tests := []struct {
		name string
		n    int // python3 starts are slow on 2 cores: fewer at once
		// change makes change i and returns its seq, or an error.
		change func(c *wire.Client, i int) (int64, error)
		// want says whether the final file holds change i.
		want func(final string, i int) bool
	}{
		{
			name: "edits", n: 40,
			change: func(c *wire.Client, i int) (int64, error) {
				var r wire.EditResult
				err := c.Call(t.Context(), wire.OpEdit, wire.EditArgs{Path: "f.txt", Old: fmt.Sprintf("<m%02d>", i), New: fmt.Sprintf("<done%02d>", i)}, &r)
				return r.Seq, err
			},
			want: func(final string, i int) bool { return strings.Contains(final, fmt.Sprintf("<done%02d>", i)) },
		},
		{
			name: "evaluate_python appends", n: 8,
			change: func(c *wire.Client, i int) (int64, error) {
				var r wire.PythonResult
				err := c.Call(t.Context(), wire.OpPython, wire.PythonArgs{
					Code: "x = 1", TimeoutMillis: 60_000, OutputChars: 100, // a bound, not a speed: 8 python3 starts at once on a loaded 2-core host
					Writes: []wire.PythonWrite{{Path: "f.txt", Mode: wire.WriteAppend, Content: fmt.Sprintf("<a%02d>", i)}},
				}, &r)
				if err == nil && (len(r.Writes) != 1 || !r.Writes[0].Applied) {
					err = fmt.Errorf("append not applied: %+v (stderr %s)", r.Writes, r.Stderr)
				}
				if err != nil {
					return 0, err
				}
				return r.Writes[0].Seq, nil
			},
			want: func(final string, i int) bool { return strings.Contains(final, fmt.Sprintf("<a%02d>", i)) },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := exec.LookPath("python3"); err != nil && tc.name == "evaluate_python appends" {
				t.Skip("no python3 on this host")
			}
			n := tc.n
			c, ws := startAgent(t)
			var body strings.Builder
			for i := range n {
				fmt.Fprintf(&body, "<m%02d>\n", i)
			}
			mustWrite(t, filepath.Join(ws, "f.txt"), body.String())
			var wg sync.WaitGroup
			errs := make([]error, n)
			seqs := make([]int64, n)
			for i := range n {
				wg.Go(func() { seqs[i], errs[i] = tc.change(c, i) })
			}
			wg.Wait()
			final := readHost(t, filepath.Join(ws, "f.txt"))
			seen := map[int64]bool{}
			for i := range n {
				if errs[i] != nil {
					t.Errorf("change %d failed: %v", i, errs[i])
					continue
				}
				if !tc.want(final, i) {
					t.Errorf("change %d reported success but is not in the file", i)
				}
				if seqs[i] == 0 || seen[seqs[i]] {
					t.Errorf("change %d has seq %d, not a fresh one", i, seqs[i])
				}
				seen[seqs[i]] = true
			}
		})
	}
}

// TestWritesAndRemovalsOfOnePathEndConsistent races write_file and rm on one
// path: the file ends as the change with the highest seq left it.
func TestWritesAndRemovalsOfOnePathEndConsistent(t *testing.T) {
	c, ws := startAgent(t)
	const n = 30
	type outcome struct {
		seq     int64
		removed bool
		content string
		err     error
	}
	out := make([]outcome, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if i%3 == 2 {
				var r wire.RemoveResult
				out[i].err = c.Call(t.Context(), wire.OpRemove, wire.PathArgs{Path: "d/f.txt"}, &r)
				out[i].seq, out[i].removed = r.Seq, true
				return
			}
			var r wire.WriteResult
			out[i].content = fmt.Sprintf("body %d", i)
			out[i].err = c.Call(t.Context(), wire.OpWrite, wire.WriteArgs{Path: "d/f.txt", Content: out[i].content}, &r)
			out[i].seq = r.Seq
		})
	}
	wg.Wait()
	var last *outcome
	for i := range out {
		if out[i].err == nil && (last == nil || out[i].seq > last.seq) {
			last = &out[i]
		}
	}
	data, err := os.ReadFile(filepath.Join(ws, "d", "f.txt"))
	switch {
	case last == nil:
		t.Fatal("no change succeeded")
	case last.removed && err == nil:
		t.Errorf("the last change (seq %d) removed the file, but it holds %q", last.seq, data)
	case !last.removed && string(data) != last.content:
		t.Errorf("the last change (seq %d) wrote %q, but the file holds %q (%v)", last.seq, last.content, data, err)
	}
}

// TestEditRefusesAFileACommandChanged checks the guard against commands:
// an edit whose file changed between its read and its rename writes nothing.
func TestEditRefusesAFileACommandChanged(t *testing.T) {
	dir := t.TempDir()
	a, err := New(Config{Workspace: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, change := range []struct {
		name string
		do   func(path string)
	}{
		{"rewritten", func(p string) { mustWrite(t, p, "other text, same length!") }},
		{"replaced by rename", func(p string) {
			mustWrite(t, p+".new", "a command's version")
			if err := os.Rename(p+".new", p); err != nil {
				t.Fatal(err)
			}
		}},
		{"removed", func(p string) { _ = os.Remove(p) }},
	} {
		t.Run(change.name, func(t *testing.T) {
			p := filepath.Join(dir, "f.txt")
			mustWrite(t, p, "original text, 24 bytes!")
			_, read, werr := a.files.readTextInfo("f.txt")
			if werr != nil {
				t.Fatal(werr)
			}
			// Make sure a same-size rewrite gets another modification time.
			time.Sleep(10 * time.Millisecond)
			change.do(p)
			after, _ := os.ReadFile(p)
			werr = a.files.replaceFile("f.txt", []byte("the edit"), 0o644, read)
			if werr == nil || werr.Code != wire.CodeConflict {
				t.Fatalf("replaceFile = %v, want a conflict", werr)
			}
			if now, _ := os.ReadFile(p); string(now) != string(after) {
				t.Errorf("the file became %q; the command's %q must stay", now, after)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, ".wink-*")); len(left) > 0 {
				t.Errorf("temporary files left: %v", left)
			}
		})
	}
}
