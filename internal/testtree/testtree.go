// Package testtree makes host folders for tests of the code that mounts
// them: a folder of files under a new allowed root.
package testtree

import (
	"os"
	"path/filepath"
	"testing"
)

// Host makes a folder "proj" of files (paths relative to it, and their
// contents) under a new temporary allowed root, and returns both.
func Host(t testing.TB, files map[string]string) (root, folder string) {
	t.Helper()
	root = t.TempDir()
	folder = filepath.Join(root, "proj")
	for name, content := range files {
		p := filepath.Join(folder, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	return root, folder
}
