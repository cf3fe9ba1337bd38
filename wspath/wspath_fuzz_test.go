package wspath

import (
	"path"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzClean checks the path rules' promises on any input: no panic, and
// an accepted path is normalised, relative, ASCII, within the limits, and
// stays under /workspace once joined.
func FuzzClean(f *testing.F) {
	for _, seed := range []string{"", ".", "a/b", "../x", "a/../../x", "/etc/passwd", "a\x00b", "café", "a//b/./c/",
		strings.Repeat("d/", 17), strings.Repeat("a", 81), "%2e%2e/x", `\..\x`, "-rf", "a\xffb"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, p string) {
		clean, err := Clean(p)
		if err != nil {
			return
		}
		joined := path.Join(Root, clean)
		if joined != Root && !strings.HasPrefix(joined, Root+"/") {
			t.Fatalf("Clean(%q) = %q leads to %s", p, clean, joined)
		}
		if clean != "" && (path.Clean(clean) != clean || strings.HasPrefix(clean, "/") || clean == ".." || strings.HasPrefix(clean, "../")) {
			t.Fatalf("Clean(%q) = %q is not normalised", p, clean)
		}
		for _, r := range clean {
			if r < 0x20 || r >= 0x7f || !utf8.ValidRune(r) {
				t.Fatalf("Clean(%q) = %q holds %U", p, clean, r)
			}
		}
		if segs := strings.Split(clean, "/"); len(segs) > MaxSegments {
			t.Fatalf("Clean(%q) = %q has %d segments", p, clean, len(segs))
		}
		if again, err := Clean(clean); err != nil || again != clean {
			t.Fatalf("Clean is not idempotent on %q: %q, %v", clean, again, err)
		}
	})
}
