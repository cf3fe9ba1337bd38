package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEncodeKeepsOneValidLine feeds the fields a client can influence
// with what could break or forge a line: each record stays one valid JSON
// object on one line, with its fields intact.
func TestEncodeKeepsOneValidLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		tool string
	}{
		{name: "newline and a forged record", tool: "podman_shell\n{\"event\":\"call\",\"tool\":\"forged\"}"},
		{name: "carriage return and control characters", tool: "a\r\x00\x1b[31m\u2028b"},
		{name: "invalid UTF-8", tool: "bad\xff\xfe\xc3"},
		{name: "huge", tool: strings.Repeat("é", 100_000)},
		{name: "quote and backslash", tool: `"}\`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			line := Encode(Record{Time: time.Now(), Event: EventCall, Tool: tc.tool, Outcome: OK})
			if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
				t.Fatalf("not one line: %q", line)
			}
			if len(line) > 2*maxFieldBytes+200 {
				t.Fatalf("record is %d bytes: a client's field was not bounded", len(line))
			}
			var got map[string]any
			if err := json.Unmarshal(line, &got); err != nil {
				t.Fatalf("not valid JSON: %v: %q", err, line)
			}
			if got["event"] != "call" || got["outcome"] != "ok" {
				t.Fatalf("fields changed: %v", got)
			}
			if !json.Valid(line) || !strings.HasPrefix(got["tool"].(string), tc.tool[:min(len(tc.tool), 3)]) && tc.name != "invalid UTF-8" {
				t.Fatalf("tool %q came back as %q", tc.tool, got["tool"])
			}
		})
	}
}

// TestDigestMatchesTheArgumentsAsJSON checks a verifier can recompute a
// call's digest from the arguments it sent.
func TestDigestMatchesTheArgumentsAsJSON(t *testing.T) {
	t.Parallel()
	args := map[string]any{"path": "a\nb", "content": strings.Repeat("x", 1<<20)}
	raw, _ := json.Marshal(args)
	size, sha := Digest(args)
	rawSize, rawSHA := Digest(json.RawMessage(raw))
	if size != len(raw) || size != rawSize || sha != rawSHA || len(sha) != 64 {
		t.Fatalf("Digest(map) = %d %s, Digest(raw) = %d %s, want %d bytes", size, sha, rawSize, rawSHA, len(raw))
	}
	if _, sha := Digest(func() {}); sha != "74234e98afe7498fb5daf1f36ac2d78acc339464f950703b8c019892f982b90b" { // sha256("null")
		t.Fatalf("unencodable arguments digest as %s, want that of null", sha)
	}
}

// TestOpenAppendsWithMode0600 checks a file log is created 0600, appends
// to what is there, and writes whole lines.
func TestOpenAppendsWithMode0600(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(path, []byte("{\"earlier\":true}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := l.Write(Record{Time: time.Now(), Event: EventSessionOpen, Session: "abc"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	sc := bufio.NewScanner(bytes.NewReader(raw))
	lines := 0
	for sc.Scan() {
		lines++
		if !json.Valid(sc.Bytes()) {
			t.Fatalf("line %d is not JSON: %q", lines, sc.Text())
		}
	}
	if lines != 4 || !strings.HasPrefix(string(raw), "{\"earlier\":true}\n") {
		t.Fatalf("got %d lines, want the earlier one and 3 appended:\n%s", lines, raw)
	}

	fresh := filepath.Join(t.TempDir(), "new.jsonl")
	l, err = Open(fresh)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("created with %v (%v), want 0600", fi.Mode().Perm(), err)
	}
}

// TestOpenNamesTheFlag checks a bad path names --audit-log.
func TestOpenNamesTheFlag(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"", filepath.Join(t.TempDir(), "missing", "dir", "audit.jsonl")} {
		if _, err := Open(path); err == nil || !strings.Contains(err.Error(), "--audit-log") {
			t.Errorf("Open(%q) = %v, want an error naming --audit-log", path, err)
		}
	}
}

type failingWriter struct{ fail bool }

func (f *failingWriter) Write(p []byte) (int, error) {
	if f.fail {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

// TestErrFollowsTheLastWrite checks a failed write is remembered until a
// write succeeds, and that a nil Log is off.
func TestErrFollowsTheLastWrite(t *testing.T) {
	t.Parallel()
	w := &failingWriter{fail: true}
	l := New(w)
	if err := l.Write(Record{Event: EventCall}); err == nil || l.Err() == nil {
		t.Fatalf("a failed write: %v, Err %v", err, l.Err())
	}
	w.fail = false
	if err := l.Write(Record{Event: EventCall}); err != nil || l.Err() != nil {
		t.Fatalf("a good write: %v, Err %v", err, l.Err())
	}
	var off *Log
	if off.Write(Record{}) != nil || off.Err() != nil || off.Close() != nil {
		t.Fatal("a nil Log must do nothing")
	}
}
