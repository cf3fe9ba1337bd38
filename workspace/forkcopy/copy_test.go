package forkcopy

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
)

// Sparse keeps the bytes and the holes: a file of 64 MiB with 1 MiB of
// data in three places takes about what the data takes.
func TestSparseKeepsBytesAndHoles(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.img")
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte("wink"), 256<<10/4)
	for _, off := range []int64{0, 20 << 20, 63 << 20} {
		if _, err := f.WriteAt(chunk, off); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Truncate(64 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	dst := filepath.Join(dir, "dst.img")
	if err := Sparse(src, dst); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(src)
	got, _ := os.ReadFile(dst)
	if !bytes.Equal(want, got) {
		t.Fatal("the copy's bytes differ")
	}
	if runtime.GOOS == "linux" {
		info, _ := os.Stat(dst)
		if used := info.Sys().(*syscall.Stat_t).Blocks * 512; used > 8<<20 {
			t.Errorf("the copy of 768 KiB of data in 64 MiB takes %d bytes: its holes were filled", used)
		}
	}
	if err := Sparse(src, dst); err == nil {
		t.Error("a copy over an existing file was made")
	}
}

// Tree copies every kind of entry a workspace holds, with its mode, and
// the copy is apart: writing it leaves the source as it was.
func TestTreeCopiesEveryEntryApart(t *testing.T) {
	src, dst := filepath.Join(t.TempDir(), "src"), filepath.Join(t.TempDir(), "dst")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(src, "a/b"), 0o755))
	must(os.WriteFile(filepath.Join(src, "a/b/file"), []byte("content"), 0o640))
	must(os.WriteFile(filepath.Join(src, "run.sh"), []byte("#!/bin/sh\n"), 0o755))
	must(os.Chmod(filepath.Join(src, "run.sh"), 0o755|fs.ModeSetgid))
	must(os.Symlink("../dangling", filepath.Join(src, "a/link")))
	must(os.Link(filepath.Join(src, "a/b/file"), filepath.Join(src, "hard")))
	must(os.Mkdir(filepath.Join(src, "locked"), 0o500))
	if runtime.GOOS == "linux" {
		must(syscall.Mkfifo(filepath.Join(src, "fifo"), 0o600))
	}
	must(Tree(src, dst))
	for name, mode := range map[string]fs.FileMode{"a/b/file": 0o640, "run.sh": 0o755 | fs.ModeSetgid, "hard": 0o640, "locked": 0o500 | fs.ModeDir} {
		info, err := os.Lstat(filepath.Join(dst, name))
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode() != mode {
			t.Errorf("%s: mode %v, want %v", name, info.Mode(), mode)
		}
	}
	if target, err := os.Readlink(filepath.Join(dst, "a/link")); err != nil || target != "../dangling" {
		t.Errorf("the link: %q, %v", target, err)
	}
	if runtime.GOOS == "linux" {
		if info, err := os.Lstat(filepath.Join(dst, "fifo")); err != nil || info.Mode()&fs.ModeNamedPipe == 0 {
			t.Errorf("the fifo: %v, %v", info, err)
		}
	}
	must(os.WriteFile(filepath.Join(dst, "hard"), []byte("changed in the copy"), 0o640))
	if got, _ := os.ReadFile(filepath.Join(src, "a/b/file")); string(got) != "content" {
		t.Errorf("writing the copy changed the source: %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(dst, "a/b/file")); string(got) != "content" {
		t.Errorf("a hard link stayed one file in the copy: %q", got)
	}
	if err := Tree(src, dst); err == nil {
		t.Error("a copy over an existing directory was made")
	}
}
