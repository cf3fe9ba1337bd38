//go:build linux

package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/wink-mcp/wink-mcp/wire"
)

// do sends one request to the agent and decodes its result.
func do[R any](t *testing.T, c *wire.Client, op string, args any) (R, error) {
	t.Helper()
	var r R
	err := c.Call(context.Background(), op, args, &r)
	return r, err
}

// wantErr checks that err is an agent error whose message contains want.
func wantErr(t *testing.T, err error, want string) {
	t.Helper()
	var werr *wire.Error
	if !errors.As(err, &werr) || !strings.Contains(werr.Message, want) {
		t.Errorf("error = %v, want one containing %q", err, want)
	}
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readHost(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// outsideDir is a directory beside the workspace that no file tool may touch.
func outsideDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "canary.txt"), "canary-token")
	return dir
}

func TestWriteFile(t *testing.T) {
	c, ws := startAgent(t)
	outside := outsideDir(t)
	mustWrite(t, filepath.Join(ws, "old.txt"), "old")
	if err := os.Chmod(filepath.Join(ws, "old.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("old.txt", filepath.Join(ws, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(ws, "plainfile"), "x")
	tests := []struct {
		name    string
		path    string
		content string
		wantErr string
		created bool
	}{
		{name: "new file with parents", path: "a/b/c.txt", content: "hello", created: true},
		{name: "replace keeps mode", path: "old.txt", content: "new"},
		{name: "48000 characters", path: "big.txt", content: strings.Repeat("€", 48000), created: true},
		{name: "48001 characters", path: "old.txt", content: strings.Repeat("a", 48001), wantErr: "48001 characters; the limit is 48000"},
		{name: "a directory", path: "a", content: "x", wantErr: `"a" is a directory`},
		{name: "a symlink", path: "link.txt", content: "x", wantErr: "is a symbolic link"},
		{name: "a fifo", path: "fifo", content: "x", wantErr: "not a regular file (a fifo)"},
		{name: "parent is a file", path: "plainfile/x", content: "x", wantErr: `a parent of "plainfile/x" is a file`},
		{name: "through a symlink out", path: "escape/new.txt", content: "x", wantErr: "leads outside /workspace"},
		{name: "over an outside file", path: "escape/canary.txt", content: "x", wantErr: "leads outside /workspace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := do[wire.WriteResult](t, c, wire.OpWrite, wire.WriteArgs{Path: tt.path, Content: tt.content})
			if tt.wantErr != "" {
				wantErr(t, err, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Created != tt.created || res.SizeBytes != int64(len(tt.content)) || readHost(t, filepath.Join(ws, tt.path)) != tt.content {
				t.Errorf("result %+v", res)
			}
		})
	}
	if fi, _ := os.Stat(filepath.Join(ws, "old.txt")); fi.Mode().Perm() != 0o600 || readHost(t, filepath.Join(ws, "old.txt")) != "new" {
		t.Errorf("old.txt: mode %v content %q; want 0600 and the replacement", fi.Mode().Perm(), readHost(t, filepath.Join(ws, "old.txt")))
	}
	if got := readHost(t, filepath.Join(outside, "canary.txt")); got != "canary-token" {
		t.Errorf("the outside canary changed: %q", got)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("a file tool created files outside: %v", entries)
	}
	leftovers, _ := filepath.Glob(filepath.Join(ws, "*", ".wink-*"))
	top, _ := filepath.Glob(filepath.Join(ws, ".wink-*"))
	if len(leftovers)+len(top) > 0 {
		t.Errorf("temporary files left: %v %v", leftovers, top)
	}
}

func TestReadFile(t *testing.T) {
	c, ws := startAgent(t)
	outside := outsideDir(t)
	var lines []string
	for i := 1; i <= 5000; i++ {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	mustWrite(t, filepath.Join(ws, "long.txt"), strings.Join(lines, "\n")+"\n")
	mustWrite(t, filepath.Join(ws, "crlf.txt"), "a\r\nb\r\n")
	mustWrite(t, filepath.Join(ws, "nonl.txt"), "one\ntwo")
	mustWrite(t, filepath.Join(ws, "empty.txt"), "")
	mustWrite(t, filepath.Join(ws, "wide.txt"), strings.Repeat("w", 2500)+"\nshort\n")
	mustWrite(t, filepath.Join(ws, "binary.bin"), "\x7fELF\x00\x01\xff\xfe")
	mustWrite(t, filepath.Join(ws, "dir/inside.txt"), "inside\n")
	if err := os.Symlink("dir/inside.txt", filepath.Join(ws, "inlink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "canary.txt"), filepath.Join(ws, "outlink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/proc/self/root/etc/passwd", filepath.Join(ws, "proclink")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("fifo", filepath.Join(ws, "fifolink")); err != nil {
		t.Fatal(err)
	}
	big, err := os.Create(filepath.Join(ws, "huge.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(wire.MaxFileBytes + 1); err != nil {
		t.Fatal(err)
	}
	big.Close()

	tests := []struct {
		name      string
		args      wire.ReadArgs
		want      wire.ReadResult
		wantStart string
		wantErr   string
	}{
		{name: "first page", args: wire.ReadArgs{Path: "long.txt", Limit: 2000}, want: wire.ReadResult{Offset: 0, Limit: 2000, TotalLines: 5000, Truncated: true}, wantStart: "line 1\nline 2\n"},
		{name: "last page", args: wire.ReadArgs{Path: "long.txt", Offset: 4000, Limit: 2000}, want: wire.ReadResult{Offset: 4000, Limit: 1000, TotalLines: 5000}, wantStart: "line 4001\n"},
		{name: "one line", args: wire.ReadArgs{Path: "long.txt", Offset: 4999, Limit: 1}, want: wire.ReadResult{Offset: 4999, Limit: 1, TotalLines: 5000}, wantStart: "line 5000\n"},
		{name: "offset past the end", args: wire.ReadArgs{Path: "long.txt", Offset: 5000, Limit: 1}, wantErr: "offset 5000 is past the end"},
		{name: "CRLF kept", args: wire.ReadArgs{Path: "crlf.txt", Limit: 10}, want: wire.ReadResult{Limit: 2, TotalLines: 2}, wantStart: "a\r\nb\r\n"},
		{name: "no final newline", args: wire.ReadArgs{Path: "nonl.txt", Limit: 10}, want: wire.ReadResult{Limit: 2, TotalLines: 2}, wantStart: "one\ntwo"},
		{name: "empty", args: wire.ReadArgs{Path: "empty.txt", Limit: 10}, want: wire.ReadResult{}},
		{name: "long line cut", args: wire.ReadArgs{Path: "wide.txt", Limit: 10}, want: wire.ReadResult{Limit: 2, TotalLines: 2, LinesCut: 1, Truncated: true}, wantStart: strings.Repeat("w", 2000) + "… [line cut at 2000 of 2500 characters]\nshort\n"},
		{name: "symlink inside", args: wire.ReadArgs{Path: "inlink", Limit: 10}, want: wire.ReadResult{Limit: 1, TotalLines: 1}, wantStart: "inside\n"},
		{name: "binary", args: wire.ReadArgs{Path: "binary.bin", Limit: 10}, wantErr: `not UTF-8 text (a binary file of 8 bytes); read its exact bytes with read_file encoding=base64`},
		{name: "symlink out", args: wire.ReadArgs{Path: "outlink", Limit: 10}, wantErr: "leads outside /workspace"},
		{name: "proc self root", args: wire.ReadArgs{Path: "proclink", Limit: 10}, wantErr: "leads outside /workspace"},
		{name: "fifo", args: wire.ReadArgs{Path: "fifo", Limit: 10}, wantErr: "not a regular file (a fifo)"},
		{name: "fifo through a link", args: wire.ReadArgs{Path: "fifolink", Limit: 10}, wantErr: "not a regular file (a fifo)"},
		{name: "directory", args: wire.ReadArgs{Path: "dir", Limit: 10}, wantErr: "is a directory; list it with ls"},
		{name: "missing", args: wire.ReadArgs{Path: "nope.txt", Limit: 10}, wantErr: `"nope.txt" does not exist`},
		{name: "too large", args: wire.ReadArgs{Path: "huge.txt", Limit: 10}, wantErr: "use podman_shell"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := do[wire.ReadResult](t, c, wire.OpRead, tt.args)
			if tt.wantErr != "" {
				wantErr(t, err, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			content := res.Content
			res.Content, res.Path = "", ""
			if res != tt.want || !strings.HasPrefix(content, tt.wantStart) {
				t.Errorf("got %+v starting %.60q; want %+v starting %.60q", res, content, tt.want, tt.wantStart)
			}
		})
	}
}

func TestEditFile(t *testing.T) {
	c, ws := startAgent(t)
	file := filepath.Join(ws, "f.txt")
	tests := []struct {
		name     string
		initial  string
		args     wire.EditArgs
		want     string
		wantN    int
		wantErr  string
		fileMode os.FileMode
	}{
		{name: "one match", initial: "a\nb\nc\n", args: wire.EditArgs{Old: "b", New: "B"}, want: "a\nB\nc\n", wantN: 1},
		{name: "not found", initial: "a\n", args: wire.EditArgs{Old: "zzz", New: "y"}, wantErr: "was not found"},
		{name: "ambiguous", initial: "x\ny\nx\ny\nx\n", args: wire.EditArgs{Old: "x", New: "z"}, wantErr: "occurs 3 times in \"f.txt\" (at lines 1, 3, 5)"},
		{name: "replace all", initial: "x\ny\nx\n", args: wire.EditArgs{Old: "x", New: "z", ReplaceAll: true}, want: "z\ny\nz\n", wantN: 2},
		{name: "same strings", initial: "a\n", args: wire.EditArgs{Old: "a", New: "a"}, wantErr: "are the same"},
		{name: "empty old", initial: "a\n", args: wire.EditArgs{Old: "", New: "b"}, wantErr: "old_string is empty"},
		{name: "CRLF file, LF old", initial: "one\r\ntwo\r\nthree\r\n", args: wire.EditArgs{Old: "one\ntwo\n", New: "1\n2\n"}, want: "1\r\n2\r\nthree\r\n", wantN: 1},
		{name: "result over the limit", initial: "x", args: wire.EditArgs{Old: "x", New: strings.Repeat("y", 48001)}, wantErr: "would be 48001 characters"},
		{name: "binary", initial: "a\xffb", args: wire.EditArgs{Old: "a", New: "b"}, wantErr: "not UTF-8 text"},
		{name: "keeps mode", initial: "a", args: wire.EditArgs{Old: "a", New: "b"}, want: "b", wantN: 1, fileMode: 0o640},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mustWrite(t, file, tt.initial)
			mode := tt.fileMode
			if mode == 0 {
				mode = 0o644
			}
			if err := os.Chmod(file, mode); err != nil {
				t.Fatal(err)
			}
			tt.args.Path = "f.txt"
			res, err := do[wire.EditResult](t, c, wire.OpEdit, tt.args)
			if tt.wantErr != "" {
				wantErr(t, err, tt.wantErr)
				if got := readHost(t, file); got != tt.initial {
					t.Errorf("a rejected edit changed the file to %q", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			fi, _ := os.Stat(file)
			if got := readHost(t, file); got != tt.want || res.Replacements != tt.wantN || fi.Mode().Perm() != mode {
				t.Errorf("file %q (mode %v), %d replacements; want %q, %d, %v", got, fi.Mode().Perm(), res.Replacements, tt.want, tt.wantN, mode)
			}
		})
	}
}

func TestRemove(t *testing.T) {
	c, ws := startAgent(t)
	outside := outsideDir(t)
	mustWrite(t, filepath.Join(ws, "tree/a/1.txt"), "1")
	mustWrite(t, filepath.Join(ws, "tree/a/2.txt"), "2")
	mustWrite(t, filepath.Join(ws, "tree/b.txt"), "b")
	mustWrite(t, filepath.Join(ws, "single.txt"), "s")
	if err := os.Symlink(outside, filepath.Join(ws, "tree/out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path    string
		want    int
		wantErr string
	}{
		{path: "single.txt", want: 1},
		{path: "link", want: 1},
		{path: "tree", want: 6},
		{path: "", wantErr: "refusing to remove the workspace root"},
		{path: "nope", wantErr: `"nope" does not exist`},
	}
	for _, tt := range tests {
		res, err := do[wire.RemoveResult](t, c, wire.OpRemove, wire.PathArgs{Path: tt.path})
		if tt.wantErr != "" {
			wantErr(t, err, tt.wantErr)
			continue
		}
		if err != nil || res.RemovedEntries != tt.want {
			t.Errorf("rm %q = %+v, %v; want %d entries", tt.path, res, err, tt.want)
		}
		if _, err := os.Lstat(filepath.Join(ws, tt.path)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%q still exists", tt.path)
		}
	}
	if readHost(t, filepath.Join(outside, "canary.txt")) != "canary-token" {
		t.Error("removing a link to outside touched the outside")
	}
}
