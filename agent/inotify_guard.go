//go:build linux

package agent

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// guardInterval is how often the agent counts what its commands'
// processes hold of the host's inotify limits.
const guardInterval = time.Second

// hiddenPatience is how many scans in a row must find the host's limits
// reached before a process that hides its descriptors is killed: a greedy
// process in another workspace is gone within one, killed by its own agent.
const hiddenPatience = 2

// startGuard bounds, from now on, what this workspace's commands hold of
// the host's inotify limits to a 1/shares part; zero or unreadable limits
// leave them unbounded. Only the first call counts.
func (a *Agent) startGuard(shares int) {
	a.guardOnce.Do(func() {
		share, ok := shareOf(shares)
		if !ok {
			return
		}
		go a.guardLoop(share, shares)
	})
}

// guardLoop checks every guardInterval until the agent is closed.
func (a *Agent) guardLoop(share inotifyShare, shares int) {
	tick := time.NewTicker(guardInterval)
	defer tick.Stop()
	pressed := 0
	for {
		select {
		case <-a.guardCtx.Done():
			return
		case <-tick.C:
		}
		pressed = a.checkInotify(share, shares, pressed)
	}
}

// checkInotify kills the commands' processes that take this workspace
// past its share, the greediest first, and those that hide their
// descriptors when the host's limits have been reached for hiddenPatience
// scans; each kill is told to the command it belongs to. pressed is how
// many scans in a row found the limits reached with a process hidden; it
// returns the new count.
func (a *Agent) checkInotify(share inotifyShare, shares int, pressed int) int {
	procs, err := readProcs()
	if err != nil {
		return pressed
	}
	supervisors := a.supervisors.live()
	holders := readHolders(procs, supervisors, share.watches+1)
	kill, instances, watches := overShare(holders, share)
	for _, h := range kill {
		a.killHolder(h, fmt.Sprintf("this workspace's processes held %d inotify instances and %d watches (counted up to the share), past its share of %d and %d "+
			"(1/%d of the host's per-user fs.inotify limits, which every workspace shares; the server's --inotify-shares sets the part)",
			instances, watches, share.instances, share.watches, shares))
	}
	var hidden []inotifyHolder
	for _, h := range holders {
		if h.hidden {
			hidden = append(hidden, h)
		}
	}
	if len(hidden) == 0 || !limitsReached() {
		return 0
	}
	if pressed+1 < hiddenPatience {
		return pressed + 1
	}
	for _, h := range hidden {
		a.killHolder(h, "it hid its descriptors from the agent (PR_SET_DUMPABLE 0) while the host's per-user inotify limits were reached, "+
			"so what it held could not be counted against this workspace's share")
	}
	return 0
}

// limitsReached says the kernel refuses this user another inotify
// instance, or another watch.
func limitsReached() bool {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		return errors.Is(err, unix.EMFILE)
	}
	defer unix.Close(fd)
	_, err = unix.InotifyAddWatch(fd, "/", unix.IN_DELETE_SELF)
	return errors.Is(err, unix.ENOSPC)
}

// killHolder kills h, if its pid still names the process the scan saw,
// and tells its command why.
func (a *Agent) killHolder(h inotifyHolder, why string) {
	comm, _ := os.ReadFile("/proc/" + strconv.Itoa(h.pid) + "/comm")
	name := strconv.Quote(strings.TrimSuffix(string(comm), "\n")) // a name the command chose: no control characters pass
	signalPinned(h.proc, unix.SIGKILL)
	msg := fmt.Sprintf("wink-mcp killed process %d (%s): %s", h.pid, name, why)
	a.log.Warn("killed a process over the workspace's inotify share", "pid", h.pid, "reason", msg)
	a.tellCommand(h.supervisor, msg)
}

// tellCommand adds msg to the standard error of the command supervisor
// runs: a job's at once, a foreground command's with its result.
func (a *Agent) tellCommand(supervisor int, msg string) {
	for _, j := range a.jobs.list() {
		j.mu.Lock()
		ours := j.sup != nil && j.sup.pid == supervisor && j.ended.IsZero()
		j.mu.Unlock()
		if ours {
			_, _ = j.errs.Write([]byte("\n" + msg + "\n"))
			return
		}
	}
	a.notesMu.Lock()
	defer a.notesMu.Unlock()
	if notes, ok := a.notes[supervisor]; ok {
		a.notes[supervisor] = append(notes, msg)
	}
}

// expectNotes starts keeping what the agent tells the foreground command
// supervisor runs (see tellCommand).
func (a *Agent) expectNotes(supervisor int) {
	a.notesMu.Lock()
	defer a.notesMu.Unlock()
	a.notes[supervisor] = []string{}
}

// takeNotes returns what was told the command supervisor ran, and stops
// keeping it.
func (a *Agent) takeNotes(supervisor int) []string {
	a.notesMu.Lock()
	defer a.notesMu.Unlock()
	notes := a.notes[supervisor]
	delete(a.notes, supervisor)
	return notes
}

// withNotes appends what the agent told a command to its standard error.
func withNotes(stderr string, notes []string) string {
	for _, n := range notes {
		stderr += "\n" + n + "\n"
	}
	return stderr
}
