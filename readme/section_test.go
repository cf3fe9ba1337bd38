package readme

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "README.md")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const begin, end = "<!-- b -->", "<!-- e -->"
	write("intro\n" + begin + "\nold\n" + end + "\noutro\n")
	if err := Sync(path, begin, end, "new\n", false); !errors.Is(err, ErrStale) {
		t.Errorf("a stale section: %v, want ErrStale", err)
	}
	if err := Sync(path, begin, end, "new\n", true); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "intro\n"+begin+"\nnew\n"+end+"\noutro\n" {
		t.Errorf("after update: %q", got)
	}
	if err := Sync(path, begin, end, "new\n", false); err != nil {
		t.Errorf("an up-to-date section: %v", err)
	}
	write("no markers\n")
	if err := Sync(path, begin, end, "new\n", true); err == nil || !strings.Contains(err.Error(), "lacks") {
		t.Errorf("missing markers: %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "no markers\n" {
		t.Errorf("a file without markers was changed: %q", got)
	}
}
