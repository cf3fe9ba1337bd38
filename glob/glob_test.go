package glob

import (
	"strings"
	"testing"
	"time"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern string
		name    string
		want    bool
	}{
		{"*.go", "main.go", true},
		{"*.go", "cmd/main.go", false},
		{"**/*.go", "main.go", true},
		{"**/*.go", "a/b/c/main.go", true},
		{"src/**", "src/a/b", true},
		{"src/**", "src", true},
		{"src/**/test_*.py", "src/test_a.py", true},
		{"src/**/test_*.py", "src/x/y/test_a.py", true},
		{"src/**/test_*.py", "lib/test_a.py", false},
		{"?.txt", "a.txt", true},
		{"?.txt", "ab.txt", false},
		{"[abc].md", "b.md", true},
		{"[!abc].md", "b.md", false},
		{"a/*/c", "a/b/c", true},
		{"a/*/c", "a/b/x/c", false},
		{"*", ".hidden", true},
		{"./a//b", "a/b", true},
		{"**/**/x", "x", true},
	}
	for _, tt := range tests {
		p, err := Compile(tt.pattern)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tt.pattern, err)
		}
		if got := p.Match(tt.name); got != tt.want {
			t.Errorf("%q matches %q = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	tests := map[string]string{
		"":                             "empty",
		"/etc/*":                       "absolute",
		"../*":                         `".."`,
		"**/../../*":                   `".."`,
		"[":                            "not a valid pattern",
		"[a-":                          "not a valid pattern",
		"a\\":                          "not a valid pattern",
		"café/*":                       "not allowed",
		"a\nb":                         "not allowed",
		".":                            "nothing but the search path",
		strings.Repeat("a", 1025):      "the limit is 1024",
		strings.Repeat("a/", 65) + "b": "segments",
	}
	for pattern, want := range tests {
		if _, err := Compile(pattern); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Compile(%q) = %v, want an error containing %q", pattern, err, want)
		}
	}
}

func TestDepth(t *testing.T) {
	for pattern, want := range map[string]int{"*.go": 1, "a/*/c": 3, "**/x": -1} {
		p, _ := Compile(pattern)
		if p.MaxDepth() != want {
			t.Errorf("MaxDepth(%q) = %d, want %d", pattern, p.MaxDepth(), want)
		}
	}
}

// TestNoExplosion matches a pathological pattern against a deep path; the
// memoised matcher answers at once where naive backtracking would not.
func TestNoExplosion(t *testing.T) {
	p, err := Compile(strings.Repeat("**/a*/", 30) + "x")
	if err != nil {
		t.Fatal(err)
	}
	name := strings.Repeat("a/", 60) + "y"
	done := make(chan bool, 1)
	go func() { done <- p.Match(name) }()
	select {
	case got := <-done:
		if got {
			t.Error("matched a path that ends in y")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("matching did not finish")
	}
}
