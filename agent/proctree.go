//go:build linux

package agent

import (
	"bytes"
	"errors"
	"os"
	"os/signal"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// proc is one process as /proc describes it.
type proc struct {
	pid, ppid int
	zombie    bool
}

// readProcs lists the processes visible in /proc. Processes that exit while
// the list is read are skipped.
func readProcs() ([]proc, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	procs := make([]proc, 0, len(entries))
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if p, ok := parseStat(b); ok {
			procs = append(procs, p)
		}
	}
	return procs, nil
}

// parseStat parses the start of /proc/PID/stat: "pid (comm) state ppid ...".
// comm may hold spaces and parentheses, so fields are read after the last ')'.
func parseStat(b []byte) (proc, bool) {
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 1 || end < open {
		return proc{}, false
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil {
		return proc{}, false
	}
	fields := bytes.Fields(b[end+1:])
	if len(fields) < 2 {
		return proc{}, false
	}
	ppid, err := strconv.Atoi(string(fields[1]))
	if err != nil {
		return proc{}, false
	}
	state := fields[0]
	return proc{pid: pid, ppid: ppid, zombie: len(state) == 1 && (state[0] == 'Z' || state[0] == 'X')}, true
}

// descendants returns every process below root in procs, zombies included.
func descendants(procs []proc, root int) []proc {
	children := make(map[int][]proc, len(procs))
	for _, p := range procs {
		children[p.ppid] = append(children[p.ppid], p)
	}
	var out []proc
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			out = append(out, c)
			queue = append(queue, c.pid)
		}
	}
	return out
}

// killDescendants sends SIGKILL to every live process below root, round after
// round, until none is left or timeout passes; between rounds it calls reap
// (if not nil) so the caller can collect the zombies that are its children.
// Repeating matters: a process that forks between the scan and the kill
// leaves a child that only the next round sees. It reports whether the tree
// is clean.
func killDescendants(root int, timeout time.Duration, reap func()) bool {
	deadline := time.Now().Add(timeout)
	for {
		procs, err := readProcs()
		if err != nil {
			return false
		}
		alive := 0
		for _, p := range descendants(procs, root) {
			if !p.zombie {
				alive++
				_ = unix.Kill(p.pid, unix.SIGKILL)
			}
		}
		if reap != nil {
			reap()
		}
		if alive == 0 || time.Now().After(deadline) {
			return alive == 0
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// signalDescendants sends sig once to every live process below root. Each
// process is pinned by a pidfd and signalled only if it still has the
// parent the scan saw, so a pid reused between the scan and the signal
// never gets it.
func signalDescendants(root int, sig unix.Signal) {
	procs, err := readProcs()
	if err != nil {
		return
	}
	for _, p := range descendants(procs, root) {
		if !p.zombie {
			signalPinned(p, sig)
		}
	}
}

// signalPinned signals p if the pid still names the process the scan saw.
func signalPinned(p proc, sig unix.Signal) {
	fd, err := unix.PidfdOpen(p.pid, 0)
	if err != nil {
		return // gone, or no pidfds: the next SIGKILL round finds what is left
	}
	defer unix.Close(fd)
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/stat")
	if err != nil {
		return
	}
	if now, ok := parseStat(b); !ok || now.ppid != p.ppid {
		return
	}
	_ = unix.PidfdSendSignal(fd, sig, nil, 0)
}

// killTree kills everything below root, then root itself.
func killTree(root int, timeout time.Duration) {
	killDescendants(root, timeout, nil)
	_ = unix.Kill(root, unix.SIGKILL)
}

// reapChildren collects every exited child of the calling process without
// blocking. It reports false once the process has no children left.
func reapChildren() bool {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ECHILD):
			return false
		case err != nil || pid == 0:
			return true
		}
	}
}

// shieldFromSignals makes the calling process survive the termination
// signals the commands it runs might send it. It catches them rather than
// ignoring them: an ignored signal stays ignored across execve and would
// reach the commands, a caught one is reset to its default.
func shieldFromSignals(sigs ...os.Signal) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	go func() {
		for range ch {
		}
	}()
}
