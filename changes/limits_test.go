package changes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestHugeSparseFilesAndGitAreListedNotRead: a 200 GB file that takes no
// space is listed as left out (naming the bound), and the changes under
// .git as one group, in a patch that applies; the walk and the patch take
// no time for them.
func TestHugeSparseFilesAndGitAreListedNotRead(t *testing.T) {
	lower, upper := t.TempDir(), t.TempDir()
	build(t, lower, map[string]string{"a.txt": "a\n", ".git/HEAD": "ref: refs/heads/main\n", "big.bin": "small\n"})
	build(t, upper, map[string]string{"a.txt": "a, edited\n", ".git/HEAD": "ref: refs/heads/other\n", ".git/index": "x"})
	for _, name := range []string{"sparse.img", "big.bin"} {
		f, err := os.Create(filepath.Join(upper, name))
		must(t, err)
		must(t, f.Truncate(200<<30))
		must(t, f.Close())
	}
	f, err := OpenOverlay(lower, upper, KernelMarkers)
	must(t, err)
	defer f.Close()
	start := time.Now()
	list, err := f.Changes(t.Context())
	must(t, err)
	left := map[string]string{}
	for _, c := range list {
		left[c.Path] = c.LeftOut()
	}
	for _, p := range []string{"sparse.img", "big.bin"} {
		if !strings.Contains(left[p], fmt.Sprint(ReadLimit)) {
			t.Errorf("%s: left out %q, want the %d-byte bound named", p, left[p], ReadLimit)
		}
	}
	if !strings.Contains(left[".git"], "git's own files") || left[".git/HEAD"] != "" || left[".git/index"] != "" {
		t.Errorf("the changes under .git are not one group: %q", left)
	}
	if left["a.txt"] != "" {
		t.Errorf("a.txt left out: %q", left["a.txt"])
	}
	var buf bytes.Buffer
	out, err := f.WritePatch(t.Context(), &buf, list, exportOptions)
	must(t, err)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("changes and patch took %s; huge files must not be read", took)
	}
	if len(out) != 3 || !strings.Contains(buf.String(), "# not in this patch: sparse.img") || !strings.Contains(buf.String(), "# not in this patch: .git/ (2 changed paths)") {
		t.Errorf("left out %q; patch:\n%s", out, buf.String())
	}
	applied := applyPatch(t, lower, buf.Bytes())
	for file, want := range map[string]string{"a.txt": "a, edited\n", ".git/HEAD": "ref: refs/heads/main\n", "big.bin": "small\n"} {
		if got, _ := os.ReadFile(filepath.Join(applied, file)); string(got) != want {
			t.Errorf("after git apply, %s holds %q, want %q", file, got, want)
		}
	}
}

// TestCancelledReadsStop: a cancelled walk or patch stops with the
// context's error instead of reading on.
func TestCancelledReadsStop(t *testing.T) {
	lower, upper := t.TempDir(), t.TempDir()
	build(t, lower, map[string]string{"a.txt": "a\n"})
	build(t, upper, map[string]string{"a.txt": "b\n", "c.txt": "c\n"})
	f, err := OpenOverlay(lower, upper, KernelMarkers)
	must(t, err)
	defer f.Close()
	list, err := f.Changes(t.Context())
	must(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := f.Changes(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Changes with a cancelled context: %v", err)
	}
	if _, err := f.WritePatch(ctx, &bytes.Buffer{}, list, exportOptions); !errors.Is(err, context.Canceled) {
		t.Errorf("WritePatch with a cancelled context: %v", err)
	}
}

// TestChangesWhileEntriesAreRenamed reads the changes hundreds of times
// while files are written and renamed over each other, as a command does:
// no call may fail, and every patch must name the stable file.
func TestChangesWhileEntriesAreRenamed(t *testing.T) {
	t.Run("copy", func(t *testing.T) {
		base, ws := t.TempDir(), t.TempDir()
		build(t, base, map[string]string{"stable.txt": "s\n"})
		build(t, ws, map[string]string{"proj/stable.txt": "s, edited\n"})
		renameRace(t, filepath.Join(ws, "proj"), func() (*Folder, error) { return OpenCopy(base, ws, "proj") })
	})
	t.Run("kernel overlay", func(t *testing.T) {
		lower, upper := t.TempDir(), t.TempDir()
		build(t, lower, map[string]string{"stable.txt": "s\n"})
		merged := mountOverlay(t, lower, upper)
		must(t, os.WriteFile(filepath.Join(merged, "stable.txt"), []byte("s, edited\n"), 0o644))
		renameRace(t, merged, func() (*Folder, error) { return OpenOverlay(lower, upper, KernelMarkers) })
	})
}

// renameRace reads changes and patches 300 times while files in dir are
// written, renamed over and removed, as a build does; no read may fail, and
// every patch holds the stable change.
func renameRace(t *testing.T, dir string, open func() (*Folder, error)) {
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			tmp := filepath.Join(dir, "dd.tmp")
			_ = os.WriteFile(tmp, []byte(strings.Repeat("x", i%5000)), 0o644)
			_ = os.Rename(tmp, filepath.Join(dir, "dd"))
			_ = os.Remove(filepath.Join(dir, fmt.Sprintf("gone%d", i%3)))
			_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("gone%d", (i+1)%3)), []byte("g"), 0o644)
		}
	})
	defer func() { cancel(); wg.Wait() }()
	for i := range 300 {
		f, err := open()
		must(t, err)
		list, err := f.Changes(t.Context())
		if err != nil {
			f.Close()
			t.Fatalf("call %d: %v", i, err)
		}
		var buf bytes.Buffer
		if _, err := f.WritePatch(t.Context(), &buf, list, exportOptions); err != nil {
			f.Close()
			t.Fatalf("patch %d: %v", i, err)
		}
		f.Close()
		if !strings.Contains(buf.String(), "+s, edited") {
			t.Fatalf("patch %d lacks the stable change:\n%s", i, buf.String())
		}
	}
}
