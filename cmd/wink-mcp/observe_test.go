package main

import (
	"bytes"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadObservabilityFlagsStopTheStart checks a bad --audit-log,
// --metrics-addr or --otlp-endpoint stops wink-mcp before it serves, with
// an error naming the flag.
func TestBadObservabilityFlagsStopTheStart(t *testing.T) {
	tests := []struct {
		name string
		args []string
		flag string
	}{
		{name: "audit log in a missing folder", args: []string{"--audit-log", filepath.Join(t.TempDir(), "no", "audit.jsonl")}, flag: "--audit-log"},
		{name: "metrics address without a port", args: []string{"--metrics-addr", "localhost"}, flag: "--metrics-addr"},
		{name: "OTLP endpoint without a scheme", args: []string{"--otlp-endpoint", "collector:4318"}, flag: "--otlp-endpoint"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			args := append([]string{"--cache-dir", t.TempDir(), "--podman-url", "unix://" + t.TempDir() + "/none.sock"}, tc.args...)
			if code := run(args, strings.NewReader(""), io.Discard, &stderr); code == 0 || !strings.Contains(stderr.String(), tc.flag) {
				t.Fatalf("exit %d, stderr %q; want a failure naming %s", code, stderr.String(), tc.flag)
			}
		})
	}
}
