package changes

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// benchTree makes a folder of dirs×files small files, and a session that
// changed changed of them: as an overlay upper directory, and as a full
// copy. It returns the folder, the upper directory and the copy's parent.
func benchTree(b *testing.B, dirs, files, changed int) (lower, upper, ws string) {
	b.Helper()
	lower, upper, ws = b.TempDir(), b.TempDir(), b.TempDir()
	current := filepath.Join(ws, "proj")
	for d := range dirs {
		for _, root := range []string{lower, current} {
			if err := os.MkdirAll(filepath.Join(root, fmt.Sprint("d", d)), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		for f := range files {
			name := filepath.Join(fmt.Sprint("d", d), fmt.Sprint("f", f, ".txt"))
			content := []byte(fmt.Sprintf("file %d of dir %d\n", f, d))
			for _, root := range []string{lower, current} {
				if err := os.WriteFile(filepath.Join(root, name), content, 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	for i := range changed {
		name := filepath.Join(fmt.Sprint("d", i%dirs), fmt.Sprint("f", i/dirs, ".txt"))
		for _, root := range []string{upper, current} {
			if err := os.MkdirAll(filepath.Join(root, filepath.Dir(name)), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, name), []byte("changed\n"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	return lower, upper, ws
}

// BenchmarkChanges lists 50 changes in a folder of 10,000 files: from an
// overlay's upper directory, which is what workspace_changes reads, and,
// as the baseline, by comparing a full copy file by file (copy mounts).
func BenchmarkChanges(b *testing.B) {
	lower, upper, ws := benchTree(b, 100, 100, 50)
	for _, tc := range []struct {
		name string
		open func() (*Folder, error)
	}{
		{"overlay", func() (*Folder, error) { return OpenOverlay(lower, upper, KernelMarkers) }},
		{"copy-baseline", func() (*Folder, error) { return OpenCopy(lower, ws, "proj") }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				f, err := tc.open()
				if err != nil {
					b.Fatal(err)
				}
				list, err := f.Changes(b.Context())
				f.Close()
				if err != nil || len(list) != 50 {
					b.Fatalf("%d changes, %v; want 50", len(list), err)
				}
			}
		})
	}
}
