//go:build linux

package workspace

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/testwait"
)

// TestALockWhoseHolderExitedIsNoOwner holds a kept workspace's lock in a
// process that dies while a process it started keeps the descriptor, as
// the last thread of a server killed with SIGKILL does while it finishes
// a write: the lock is not an owner's. A probe counts its instance dead,
// and a session that asks for the workspace waits for the kernel to
// release the lock, then gets it.
func TestALockWhoseHolderExitedIsNoOwner(t *testing.T) {
	flock, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("needs flock (util-linux)")
	}
	m, _, logs := newTestManager(t, nil)
	root := keptRoot(m.cfg.CacheDir, "proj")
	must(t, os.MkdirAll(root, 0o700))
	path := filepath.Join(root, lockFile)
	must(t, os.WriteFile(path, nil, 0o600))
	// flock(1) takes the lock and runs sleep, which inherits the descriptor.
	holder := exec.Command(flock, "--exclusive", path, "sleep", "600")
	holder.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	must(t, holder.Start())
	t.Cleanup(func() { _ = syscall.Kill(-holder.Process.Pid, syscall.SIGKILL) })
	testwait.For(t, "flock to take the lock", func() bool { alive, _ := probeLock(path); return alive })
	if pid := exitingHolder(path); pid != 0 {
		t.Fatalf("a live holder is reported exiting: %d", pid)
	}

	must(t, holder.Process.Kill())
	_ = holder.Wait() // gone and reaped; sleep holds the lock
	if pid := exitingHolder(path); pid != holder.Process.Pid {
		t.Fatalf("exitingHolder = %d, want the dead locker %d", pid, holder.Process.Pid)
	}
	if alive, err := probeLock(path); alive || err != nil {
		t.Errorf("probeLock of a lock whose holder exited = %v, %v; want dead", alive, err)
	}

	m.Register("s", SessionOptions{Workspace: "proj"})
	got := make(chan error, 1)
	go func() {
		_, err := m.Session("s")
		got <- err
	}()
	testwait.For(t, "the session to wait for the lock", func() bool {
		logs.mu.Lock()
		defer logs.mu.Unlock()
		return strings.Contains(logs.buf.String(), "waiting for an exiting process to release its lock")
	})
	must(t, syscall.Kill(-holder.Process.Pid, syscall.SIGKILL)) // sleep, and with it the lock
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("the session after the lock was released: %v", err)
		}
	case <-time.After(exitingHolderWait + 10*time.Second):
		t.Fatal("the session is still waiting after the lock was released")
	}
}
