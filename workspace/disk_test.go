package workspace

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wink-mcp/wink-mcp/workspace/disk"
)

// needRoot skips a test that mounts filesystems when not root, except in
// CI, where a skip would hide a broken set-up, and always with -short.
func needRoot(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs root; -short (make unit) leaves it out")
	}
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("CI runs as root; this test mounts a filesystem")
		}
		t.Skip("needs root to mount a filesystem")
	}
}

func TestDiskLimitIsEnforcedByTheKernel(t *testing.T) {
	needRoot(t)
	const limit = 32 << 20
	m, _, _ := newTestManager(t, func(c *Config) { c.DiskBytes = limit })
	if m.disk == nil {
		t.Fatal("disk limits are not enforced as root")
	}
	s, _ := m.Session("fill")
	res := echo(t, s, "sh", "-c", "dd if=/dev/zero of=big bs=1M count=64 2>&1; echo exit=$?; dd if=/dev/zero of=big2 bs=1k 2>/dev/null; sync")
	if !strings.Contains(res.Stdout, "No space left on device") || strings.Contains(res.Stdout, "exit=0") {
		t.Fatalf("filling the workspace: %q", res.Stdout)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(s.workspaceDir(), &st); err != nil {
		t.Fatal(err)
	}
	if total := int64(st.Blocks) * st.Bsize; total > limit {
		t.Errorf("the session's filesystem holds %d bytes, more than the limit %d", total, limit)
	}
	fi, err := os.Stat(s.diskFile)
	if err != nil {
		t.Fatal(err)
	}
	if used := fi.Sys().(*syscall.Stat_t).Blocks * 512; used > limit+limit/8 {
		t.Errorf("the disk image takes %d bytes of the host disk, more than the limit %d", used, limit)
	}

	if _, err := s.files.WriteFile(ctx, "more.txt", strings.Repeat("x", 40000)); err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Errorf("write_file on a full disk = %v, want a no-space error", err)
	}
	echo(t, s, "rm", "big", "big2")
	if _, err := s.files.WriteFile(ctx, "more.txt", "fits now"); err != nil {
		t.Errorf("write_file after freeing space: %v", err)
	}

	m.EndSession(ctx, "fill")
	for _, p := range []string{s.dir, s.diskFile} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s left after the session ended: %v", p, err)
		}
	}
	if points, _ := disk.MountPoints(); strings.Contains(strings.Join(points, "\n"), m.inst.dir) {
		t.Errorf("a session filesystem is still mounted under %s", m.inst.dir)
	}
}

func TestDiskLimitLargerThanTheFreeSpaceIsRefused(t *testing.T) {
	needRoot(t)
	m, _, _ := newTestManager(t, func(c *Config) { c.DiskBytes = 1 << 60 })
	s, _ := m.Session("huge")
	_, err := s.Exec(ctx, ExecRequest{Argv: []string{"true"}, Timeout: time.Second, OutputLimit: 1})
	if err == nil || !strings.Contains(err.Error(), "less than one session's disk limit of 1.0 EiB") || !strings.Contains(err.Error(), "--disk-limit") {
		t.Fatalf("err = %v, want a refusal naming the limit and the flag", err)
	}
	if _, err := os.Stat(s.diskFile); !os.IsNotExist(err) {
		t.Errorf("an image was left after the refusal: %v", err)
	}
}

func TestSweepUnmountsTheDisksOfADeadInstance(t *testing.T) {
	needRoot(t)
	dead, _, _ := newTestManager(t, nil)
	s, _ := dead.Session("left")
	echo(t, s, "true")
	// A server killed with SIGKILL: its lock goes, its mounts stay.
	dead.inst.lock.Close()

	m, _, _ := newTestManager(t, func(c *Config) { c.CacheDir = dead.cfg.CacheDir })
	if _, err := m.SweepOrphans(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dead.inst.dir); !os.IsNotExist(err) {
		t.Errorf("dead instance's directory left: %v", err)
	}
	if points, _ := disk.MountPoints(); strings.Contains(strings.Join(points, "\n"), dead.inst.dir) {
		t.Errorf("a dead instance's session filesystem is still mounted")
	}
}
