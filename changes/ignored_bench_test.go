package changes

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// ignoredTree makes a folder that ignores node_modules/, and a session's
// overlay upper directory holding a node_modules tree of dirs×files new
// files and two real changes, as an npm install and an edit leave it.
func ignoredTree(tb testing.TB, dirs, files int) (lower, upper string) {
	tb.Helper()
	lower, upper = tb.TempDir(), tb.TempDir()
	write := func(root, name, content string) {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	write(lower, ".gitignore", "node_modules/\n")
	write(lower, "src/index.js", "console.log(1)\n")
	write(upper, "src/index.js", "console.log(2)\n")
	write(upper, "src/new.js", "export {}\n")
	for d := range dirs {
		for f := range files {
			write(upper, fmt.Sprintf("node_modules/pkg%d/lib/f%d.js", d, f), "x\n")
		}
	}
	return lower, upper
}

// BenchmarkIgnoredTree lists and writes as a patch the changes of a
// session that made 20,000 ignored files (node_modules) and two real
// changes: what an export at session end and workspace_diff do. Comparing
// each ignored file through the overlay took 5.1 s an operation on an idle
// 2-core VM; counting the ignored directory through its descriptors takes
// about 0.16 s of CPU.
func BenchmarkIgnoredTree(b *testing.B) {
	lower, upper := ignoredTree(b, 1000, 20)
	for b.Loop() {
		f, err := OpenOverlay(lower, upper, KernelMarkers)
		if err != nil {
			b.Fatal(err)
		}
		list, err := f.Changes(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.WritePatch(context.Background(), io.Discard, list, PatchOptions{TextLimit: 1 << 20}); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}
