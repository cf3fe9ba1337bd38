//go:build linux

package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/wink-mcp/wink-mcp/wire"
)

func TestList(t *testing.T) {
	c, ws := startAgent(t)
	outside := outsideDir(t)
	mustWrite(t, filepath.Join(ws, "b.txt"), "bb")
	mustWrite(t, filepath.Join(ws, "a.txt"), "a")
	mustWrite(t, filepath.Join(ws, "zdir/x"), "x")
	mustWrite(t, filepath.Join(ws, "adir/y"), "y")
	if err := os.Symlink(outside, filepath.Join(ws, "out")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := do[wire.ListResult](t, c, wire.OpList, wire.PathArgs{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range res.Entries {
		got = append(got, e.Kind+":"+e.Path+":"+e.LinkTarget)
	}
	want := []string{"directory:adir:", "directory:zdir:", "file:a.txt:", "file:b.txt:", "other:fifo:", "symlink:out:" + outside}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("ls = %v, want %v", got, want)
	}
	one, err := do[wire.ListResult](t, c, wire.OpList, wire.PathArgs{Path: "b.txt"})
	if err != nil || len(one.Entries) != 1 || one.Entries[0].SizeBytes != 2 || one.Entries[0].Modified.IsZero() {
		t.Errorf("ls of a file = %+v, %v", one, err)
	}
	if sub, err := do[wire.ListResult](t, c, wire.OpList, wire.PathArgs{Path: "zdir"}); err != nil || len(sub.Entries) != 1 || sub.Entries[0].Path != "zdir/x" {
		t.Errorf("ls zdir = %+v, %v", sub, err)
	}
	// A trailing slash makes the kernel follow a link; out of the workspace it must not.
	_, err = do[wire.ListResult](t, c, wire.OpList, wire.PathArgs{Path: "out/"})
	wantErr(t, err, "leads outside /workspace")
	if _, err := do[wire.ListResult](t, c, wire.OpList, wire.PathArgs{Path: "out/canary.txt"}); err == nil {
		t.Error("ls through a symlink out of the workspace succeeded")
	}
}

func TestListTruncates(t *testing.T) {
	c, ws := startAgent(t)
	for i := range 2100 {
		mustWrite(t, filepath.Join(ws, "many", fmt.Sprintf("f%04d", i)), "")
	}
	res, err := do[wire.ListResult](t, c, wire.OpList, wire.PathArgs{Path: "many"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Entries) != 2000 || !res.Truncated || res.Total != 2100 || res.Entries[0].Name != "f0000" {
		t.Errorf("%d entries, truncated %v, total %d", len(res.Entries), res.Truncated, res.Total)
	}
}

func TestGlob(t *testing.T) {
	c, ws := startAgent(t)
	for _, f := range []string{"main.go", "cmd/app/app.go", "cmd/app/app_test.go", "docs/readme.md", "z.go"} {
		mustWrite(t, filepath.Join(ws, f), "package x\n")
	}
	if err := os.Symlink(".", filepath.Join(ws, "loop")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..", filepath.Join(ws, "cmd/up")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		pattern, path string
		want          string
		wantErr       string
	}{
		{pattern: "*.go", want: "main.go z.go"},
		{pattern: "**/*.go", want: "cmd/app/app.go cmd/app/app_test.go main.go z.go"},
		{pattern: "*_test.go", path: "cmd/app", want: "cmd/app/app_test.go"},
		{pattern: "**/*.md", want: "docs/readme.md"},
		{pattern: "[", wantErr: "not a valid pattern"},
		{pattern: "../*", wantErr: `".."`},
		{pattern: "*.go", path: "nope", wantErr: "does not exist"},
	}
	for _, tt := range tests {
		res, err := do[wire.GlobResult](t, c, wire.OpGlob, wire.GlobArgs{Pattern: tt.pattern, Path: tt.path})
		if tt.wantErr != "" {
			wantErr(t, err, tt.wantErr)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range res.Matches {
			got = append(got, m.Path)
		}
		if strings.Join(got, " ") != tt.want || res.Truncated {
			t.Errorf("glob %q in %q = %v (truncated %v), want %s", tt.pattern, tt.path, got, res.Truncated, tt.want)
		}
	}
}

func TestGlobAndGrepTruncateAt2000(t *testing.T) {
	c, ws := startAgent(t)
	for i := range 2050 {
		mustWrite(t, filepath.Join(ws, fmt.Sprintf("d%d", i%7), fmt.Sprintf("f%04d.txt", i)), "needle\n")
	}
	g, err := do[wire.GlobResult](t, c, wire.OpGlob, wire.GlobArgs{Pattern: "**/*.txt"})
	if err != nil || len(g.Matches) != 2000 || !g.Truncated || g.Note == "" {
		t.Errorf("glob: %d matches, truncated %v, note %q, %v", len(g.Matches), g.Truncated, g.Note, err)
	}
	r, err := do[wire.GrepResult](t, c, wire.OpGrep, wire.GrepArgs{Pattern: "needle"})
	if err != nil || len(r.Matches) != 2000 || !r.Truncated {
		t.Errorf("grep: %d matches, truncated %v, %v", len(r.Matches), r.Truncated, err)
	}
}

func TestGrep(t *testing.T) {
	c, ws := startAgent(t)
	outside := outsideDir(t)
	mustWrite(t, filepath.Join(ws, "a.go"), "package a\nfunc Hello() {}\n// hello again\n")
	mustWrite(t, filepath.Join(ws, "sub/b.py"), "def hello():\n    pass\n")
	mustWrite(t, filepath.Join(ws, "bin.dat"), "hello\x00world")
	mustWrite(t, filepath.Join(ws, "wide.txt"), "hello "+strings.Repeat("x", 600)+"\n")
	mustWrite(t, filepath.Join(ws, "bomb.txt"), strings.Repeat("a", 1<<20)+"!\n")
	if err := os.Symlink(outside, filepath.Join(ws, "out")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    wire.GrepArgs
		want    []string
		wantErr string
	}{
		{name: "case sensitive", args: wire.GrepArgs{Pattern: "hello"}, want: []string{"a.go:3:// hello again", "sub/b.py:1:def hello():", "wide.txt:1:hello " + strings.Repeat("x", 494) + "…"}},
		{name: "insensitive flag", args: wire.GrepArgs{Pattern: "(?i)^func hello"}, want: []string{"a.go:2:func Hello() {}"}},
		{name: "glob on names", args: wire.GrepArgs{Pattern: "hello", Glob: "*.py"}, want: []string{"sub/b.py:1:def hello():"}},
		{name: "under a path", args: wire.GrepArgs{Pattern: "pass", Path: "sub"}, want: []string{"sub/b.py:2:    pass"}},
		{name: "one file", args: wire.GrepArgs{Pattern: "package", Path: "a.go"}, want: []string{"a.go:1:package a"}},
		{name: "no links followed out", args: wire.GrepArgs{Pattern: "canary"}, want: nil},
		{name: "linear time on a backtracking bomb", args: wire.GrepArgs{Pattern: "(a+)+$", Glob: "bomb.txt"}, want: nil},
		{name: "invalid regexp", args: wire.GrepArgs{Pattern: "(unclosed"}, wantErr: "not a valid RE2 regular expression: error parsing regexp: missing closing ): `(unclosed`"},
		{name: "backreference", args: wire.GrepArgs{Pattern: `(a)\1`}, wantErr: "invalid escape sequence"},
		{name: "lookahead", args: wire.GrepArgs{Pattern: `a(?=b)`}, wantErr: "invalid or unsupported Perl syntax"},
		{name: "huge repeat", args: wire.GrepArgs{Pattern: `a{1001}`}, wantErr: "invalid repeat count"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := do[wire.GrepResult](t, c, wire.OpGrep, tt.args)
			if tt.wantErr != "" {
				wantErr(t, err, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range res.Matches {
				got = append(got, fmt.Sprintf("%s:%d:%s", m.Path, m.LineNumber, m.Line))
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("grep = %q, want %q", got, tt.want)
			}
		})
	}
	res, _ := do[wire.GrepResult](t, c, wire.OpGrep, wire.GrepArgs{Pattern: "x"})
	if res.FilesSkipped != 1 {
		t.Errorf("skipped %d files, want the binary one", res.FilesSkipped)
	}
}
