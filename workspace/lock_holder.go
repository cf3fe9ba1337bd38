package workspace

import (
	"log/slog"
	"time"
)

// A process killed with SIGKILL shows as a zombie as soon as its main
// thread has gone, but its descriptors, and with them its locks, go only
// when its last thread leaves the kernel: a thread in a write or an fsync
// on a loaded disk can hold them for seconds after a restarted client
// (or test) has seen the process die. A lock whose holder has exited is
// not an owner: probes count it as dead, and a claim waits for the kernel
// to release it, within exitingHolderWait.

// exitingHolderWait bounds how long a lock whose holder is exiting is
// waited for.
const exitingHolderWait = 30 * time.Second

// awaitExitingHolder waits, at most exitingHolderWait, while the lock on
// the file at path is held by a process that has exited or is exiting
// (see exitingHolder), and returns that process while it still holds
// the lock, 0 once it does not.
func awaitExitingHolder(path string, log *slog.Logger) int {
	pid := exitingHolder(path)
	if pid == 0 {
		return 0
	}
	log.Info("waiting for an exiting process to release its lock", "lock", path, "pid", pid)
	start := time.Now()
	for wait := 10 * time.Millisecond; pid != 0 && time.Since(start) < exitingHolderWait; wait = min(2*wait, 200*time.Millisecond) {
		time.Sleep(wait)
		pid = exitingHolder(path)
	}
	log.Info("waited for an exiting process to release its lock", "lock", path, "released", pid == 0, "duration_ms", time.Since(start).Milliseconds())
	return pid
}
