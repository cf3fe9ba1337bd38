package mounts

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteDurablyLeavesNothingWhenItFails: a patch whose writing fails
// leaves no file, no temporary file and none of the directories it made;
// one that succeeds is whole.
func TestWriteDurablyLeavesNothingWhenItFails(t *testing.T) {
	root := t.TempDir()
	dst := filepath.Join(root, "20261125T000000Z-abc", "code", "app.patch")
	err := WriteDurably(dst, func(w io.Writer) error {
		w.Write([]byte("half a patch"))
		return context.DeadlineExceeded
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WriteDurably = %v", err)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("a failed write left %v", entries)
	}
	if err := WriteDurably(dst, func(w io.Writer) error { _, err := w.Write([]byte("whole")); return err }); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(dst); string(data) != "whole" {
		t.Errorf("the patch holds %q", data)
	}
	if stale, _ := filepath.Glob(filepath.Join(filepath.Dir(dst), ".app.patch-*")); len(stale) != 0 {
		t.Errorf("temporary files left: %v", stale)
	}
}
