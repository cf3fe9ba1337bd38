package kubernetes

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// The relay's stderr is logged a line at a time, and a line without its
// end is logged in pieces of maxStderrLine instead of growing without
// bound.
func TestLineLoggerBoundsALine(t *testing.T) {
	var out bytes.Buffer
	l := &lineLogger{log: slog.New(slog.NewTextHandler(&out, nil))}
	if _, err := l.Write([]byte("one\ntw")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Write([]byte("o\n")); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if _, err := l.Write(bytes.Repeat([]byte("x"), 1000)); err != nil {
			t.Fatal(err)
		}
	}
	logged := out.String()
	if !strings.Contains(logged, "line=one") || !strings.Contains(logged, "line=two") {
		t.Errorf("the whole lines were not logged: %s", logged)
	}
	if n := strings.Count(logged, "line=xxx"); n != 2 {
		t.Errorf("10,000 bytes without a newline were logged in %d pieces, want 2 of %d", n, maxStderrLine)
	}
	if l.buf.Len() > maxStderrLine {
		t.Errorf("the logger holds %d bytes, over %d", l.buf.Len(), maxStderrLine)
	}
}
