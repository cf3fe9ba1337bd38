package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// logBuffer collects the JSON log a wink-mcp process writes to stderr.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(b)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// records returns the log records that parse as JSON.
func (l *logBuffer) records() []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(l.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil {
			out = append(out, rec)
		}
	}
	return out
}

func (l *logBuffer) find(msg string, attrs map[string]any) map[string]any {
	for _, rec := range l.records() {
		if rec["msg"] != msg {
			continue
		}
		match := true
		for k, v := range attrs {
			if fmt.Sprint(rec[k]) != fmt.Sprint(v) {
				match = false
			}
		}
		if match {
			return rec
		}
	}
	return nil
}

// count returns how many records carry event=name.
func (l *logBuffer) count(event string) int {
	n := 0
	for _, rec := range l.records() {
		if rec["event"] == event {
			n++
		}
	}
	return n
}
