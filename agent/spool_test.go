//go:build linux

package agent

import (
	"bytes"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestReservedStderrSurvivesAFullDisk: once a job's stdout has filled its
// filesystem, what it writes to stderr is still stored, within the
// reserve; a spool without one loses it.
func TestReservedStderrSurvivesAFullDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("needs root; -short (make unit) leaves it out")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("mounting a small tmpfs: %v", err)
		}
		t.Skipf("mounting a small tmpfs needs root: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	spools := map[string]*spool{}
	for _, name := range []string{"out", "reserved", "plain"} {
		s, err := openSpool(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.close)
		spools[name] = s
	}
	spools["reserved"].reserve(stderrReserve)
	flood := bytes.Repeat([]byte("wink-mcp-output\n"), 4096)
	for range 64 {
		_, _ = spools["out"].Write(flood)
	}
	if _, dropped, why := spools["out"].state(); dropped == 0 || why == "" {
		t.Fatalf("4 MiB into a 1 MiB filesystem: %d bytes dropped (%q), want the rest dropped with the reason", dropped, why)
	}
	for name, wantKept := range map[string]bool{"reserved": true, "plain": false} {
		_, _ = spools[name].Write([]byte("finished\n"))
		size, dropped, why := spools[name].state()
		if kept := size == 9 && dropped == 0; kept != wantKept {
			t.Errorf("%s spool after the disk filled: %d bytes kept, %d dropped (%q); want kept %v", name, size, dropped, why, wantKept)
		}
	}
}
