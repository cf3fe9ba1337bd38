package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// freezerRoot is the cgroup v1 freezer hierarchy. Under it a frozen task
// stays frozen through SIGKILL until it is thawed (cgroup v2's freezer
// lets a fatal signal through), which is what freezeThread needs.
const freezerRoot = "/sys/fs/cgroup/freezer"

// freezeThread freezes one thread of process pid other than its main
// thread, in a freezer group of its own, and returns the function that
// thaws it (also run at cleanup). Killed with SIGKILL, the process then
// shows as a zombie, its main thread gone, while the frozen thread keeps
// every descriptor and lock the process holds: what a thread stuck in a
// write or an fsync on a loaded disk does for seconds.
func freezeThread(t *testing.T, pid int) (thaw func()) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(freezerRoot, "tasks")); err != nil {
		t.Fatalf("this test needs the cgroup v1 freezer at %s (cgroups in hybrid mode, as on the project's test machines): %v", freezerRoot, err)
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	tid := ""
	for _, task := range tasks {
		if task.Name() != strconv.Itoa(pid) {
			tid = task.Name()
			break
		}
	}
	if tid == "" {
		t.Fatalf("process %d has no thread but its main one", pid)
	}
	group := filepath.Join(freezerRoot, "wink-test-"+randomHex(4))
	must(t, os.Mkdir(group, 0o755))
	must(t, os.WriteFile(filepath.Join(group, "tasks"), []byte(tid), 0o644))
	must(t, os.WriteFile(filepath.Join(group, "freezer.state"), []byte("FROZEN"), 0o644))
	waitUntil(t, 10*time.Second, "the thread to freeze", func() bool {
		state, _ := os.ReadFile(filepath.Join(group, "freezer.state"))
		return strings.TrimSpace(string(state)) == "FROZEN"
	})
	thaw = sync.OnceFunc(func() {
		_ = os.WriteFile(filepath.Join(group, "freezer.state"), []byte("THAWED"), 0o644)
		// The group can go once the thread has died or left it.
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if os.Remove(group) == nil {
				return
			}
		}
		t.Errorf("the freezer group %s was not removed", group)
	})
	t.Cleanup(thaw)
	return thaw
}

// lockWaitLog is what a server logs when it waits for an exiting
// process's lock.
const lockWaitLog = "waiting for an exiting process to release its lock"

// restartWhileExiting kills p with SIGKILL while one of its threads is
// frozen (see freezeThread), so that its main thread is a zombie, which
// is all a client (or waitExit) sees, while its locks are still held, and
// starts a new server with opts. The thread is let go once the new server
// logs that it waits for such a lock, or when release is called.
func (p *proc) restartWhileExiting(opts startOptions) (next *proc, release func()) {
	p.t.Helper()
	thaw := freezeThread(p.t, p.cmd.Process.Pid)
	must(p.t, p.cmd.Process.Signal(syscall.SIGKILL))
	p.waitExit(10 * time.Second)
	next = start(p.t, opts)
	released := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer thaw()
		for next.logs.find(lockWaitLog, nil) == nil {
			select {
			case <-released:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return next, sync.OnceFunc(func() {
		close(released)
		<-done
	})
}
