package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A kept session whose disk image cannot be mounted is named, with the
// reason, instead of the export saying there is no such session.
func TestExportNamesAKeptSessionItCannotRead(t *testing.T) {
	if testing.Short() {
		t.Skip("needs root; -short (make unit) leaves it out")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: kept disks are mounted only as root")
	}
	cache := t.TempDir()
	instance := filepath.Join(cache, "instances", "0123456789abcdef")
	for _, dir := range []string{filepath.Join(instance, "disks"), filepath.Join(instance, "sessions", "feedface")} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(instance, "disks", "feedface.img"), make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := runExport([]string{"--cache-dir", cache, "--session", "feed"}, func(string) (string, bool) { return "", false }, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "session feedface cannot be read") || !strings.Contains(stderr.String(), "feedface.img") {
		t.Errorf("exit %d, stderr %q; want 1 and the session and image named", code, stderr.String())
	}
}
