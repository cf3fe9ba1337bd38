//go:build linux

package agent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want proc
		ok   bool
	}{
		{name: "plain", in: "42 (sleep) S 7 42 42 0", want: proc{pid: 42, ppid: 7}, ok: true},
		{name: "comm with spaces and parens", in: "43 (a) b (c) R 1 43", want: proc{pid: 43, ppid: 1}, ok: true},
		{name: "zombie", in: "44 (sh) Z 1 0", want: proc{pid: 44, ppid: 1, zombie: true}, ok: true},
		{name: "truncated", in: "45 (sh)", ok: false},
		{name: "garbage", in: "nonsense", ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseStat([]byte(tt.in))
			if ok != tt.ok || (ok && got != tt.want) {
				t.Errorf("parseStat(%q) = %+v, %v; want %+v, %v", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestDescendants(t *testing.T) {
	procs := []proc{{pid: 10, ppid: 1}, {pid: 11, ppid: 10}, {pid: 12, ppid: 11}, {pid: 13, ppid: 1}, {pid: 14, ppid: 10, zombie: true}}
	var got []int
	for _, p := range descendants(procs, 10) {
		got = append(got, p.pid)
	}
	if len(got) != 3 || got[0] != 11 || got[1] != 14 || got[2] != 12 {
		t.Errorf("descendants of 10 = %v, want [11 14 12]", got)
	}
}

func TestCapture(t *testing.T) {
	tests := []struct {
		name      string
		limit     int
		writes    []string
		want      string
		truncated bool
	}{
		{name: "under limit", limit: 10, writes: []string{"abc", "def"}, want: "abcdef"},
		{name: "exactly at limit", limit: 6, writes: []string{"abcdef"}, want: "abcdef"},
		{name: "over limit", limit: 4, writes: []string{"abc", "def"}, want: "abcd", truncated: true},
		{name: "cut inside a rune drops it", limit: 4, writes: []string{"ab€"}, want: "ab", truncated: true},
		{name: "invalid bytes replaced", limit: 10, writes: []string{"a\xffb"}, want: "a\uFFFDb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCapture(tt.limit, true)
			var total int
			for _, w := range tt.writes {
				n, err := c.Write([]byte(w))
				if err != nil || n != len(w) {
					t.Fatalf("Write = %d, %v", n, err)
				}
				total += n
			}
			got, truncated := c.text()
			if got != tt.want || truncated != tt.truncated || c.total != int64(total) {
				t.Errorf("text = %q, %v (total %d); want %q, %v (total %d)", got, truncated, c.total, tt.want, tt.truncated, total)
			}
		})
	}
}

func TestMergeEnv(t *testing.T) {
	got := mergeEnv([]string{"A=1", "PATH=/bin", "B=2"}, map[string]string{"PATH": "/x", "C": "3"})
	joined := strings.Join(got, ",")
	for _, want := range []string{"A=1", "B=2", "PATH=/x", "C=3"} {
		if !strings.Contains(joined, want) {
			t.Errorf("merged env %v lacks %s", got, want)
		}
	}
	if strings.Contains(joined, "PATH=/bin") {
		t.Errorf("merged env %v kept the overridden PATH", got)
	}
}

// TestIsEscapeMatchesOSRoot pins the os.Root error text isEscape depends on.
func TestIsEscapeMatchesOSRoot(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("/etc", filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, p := range []string{"out/passwd", "../x"} {
		_, err := root.Stat(p)
		if !isEscape(err) {
			t.Errorf("Stat(%q) error %v is not recognised as an escape", p, err)
		}
	}
	if _, err := root.Stat("missing"); isEscape(err) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file is reported as %v", err)
	}
}
