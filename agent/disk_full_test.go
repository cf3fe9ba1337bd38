//go:build linux

package agent

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wink-mcp/wink-mcp/wire"
)

// smallTmpfs mounts a tmpfs with options on a new directory.
func smallTmpfs(t *testing.T, options string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs root; -short (make unit) leaves it out")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, options); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("mounting a small tmpfs: %v", err)
		}
		t.Skipf("mounting a small tmpfs needs root: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// TestAFullDiskIsReportedAtTheCommandsEnd: a command that leaves the
// workspace's disk, its inode table or the temporary directory full gets
// a report naming what takes the most of it; one that leaves room gets
// none. A job's report, asked for after the space was freed, says so.
func TestAFullDiskIsReportedAtTheCommandsEnd(t *testing.T) {
	ws := smallTmpfs(t, "size=4m,nr_inodes=300")
	tmp := smallTmpfs(t, "size=2m")
	t.Setenv("TMPDIR", tmp)
	c := startAgentIn(t, ws)
	sh := func(script string) *wire.DiskFull {
		t.Helper()
		res, err := run(t, c, wire.ExecArgs{Argv: []string{"sh", "-c", script}, Capture: true})
		if err != nil {
			t.Fatal(err)
		}
		return res.DiskFull
	}
	top := func(d wire.DiskSpace) string {
		if len(d.Top) == 0 {
			return ""
		}
		return d.Top[0].Path
	}

	if d := sh("echo small > f"); d != nil {
		t.Errorf("a command that left room: %+v", d)
	}
	d := sh("head -c 2000 /dev/zero > small; head -c 8000000 /dev/zero > big")
	if d == nil || !d.WorkspaceFull || d.TmpFull || !d.Workspace.Full() || top(d.Workspace) != filepath.Join(ws, "big") {
		t.Errorf("a command that filled the workspace: %+v", d)
	}
	d = sh("rm big; mkdir many && cd many && i=0; while touch f$i 2>/dev/null; do i=$((i+1)); done")
	if d == nil || !d.WorkspaceFull || !d.Workspace.NoFreeFiles() || top(d.Workspace) != filepath.Join(ws, "many") || d.Workspace.Top[0].Entries < 200 {
		t.Errorf("a command that used every inode: %+v", d)
	}
	d = sh(`rm -r many; head -c 4000000 /dev/zero > "$TMPDIR/fill"`)
	if d == nil || d.WorkspaceFull || !d.TmpFull || d.Tmp == nil || top(*d.Tmp) != filepath.Join(tmp, "fill") {
		t.Errorf("a command that filled the temporary directory: %+v", d)
	}
	if d := sh(`rm "$TMPDIR/fill"`); d != nil {
		t.Errorf("after the space was freed: %+v", d)
	}

	job := startJob(t, c, "head -c 8000000 /dev/zero > big", 0).Job.ID
	in := waitJobExit(t, c, job)
	if in.DiskFull == nil || !in.DiskFull.WorkspaceFull || !in.DiskFull.Workspace.Full() {
		t.Errorf("a job that filled the workspace: %+v", in.DiskFull)
	}
	sh("rm big")
	if in := jobInfo(t, c, job); in.DiskFull == nil || !in.DiskFull.WorkspaceFull || in.DiskFull.Workspace.Full() {
		t.Errorf("the job, asked about after the space was freed: %+v", in.DiskFull)
	}
	var list wire.JobListResult
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Call(ctx, wire.OpJobList, wire.JobListArgs{}, &list); err != nil || len(list.Jobs) != 1 || list.Jobs[0].DiskFull != nil {
		t.Errorf("a list that did not ask for the disks: %+v, %v", list, err)
	}
}

// BenchmarkFullNow is what every command's end pays for the report: a
// statfs of the workspace and one of a temporary directory elsewhere.
func BenchmarkFullNow(b *testing.B) {
	ws := b.TempDir()
	b.Setenv("TMPDIR", "/dev/shm")
	a, err := New(Config{Workspace: ws, Self: "/bin/true"})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	if a.disks.tmpOnWorkspace {
		b.Fatal("/dev/shm is on the workspace's filesystem: the benchmark would look at one filesystem, not two")
	}
	for b.Loop() {
		a.disks.fullNow()
	}
}
