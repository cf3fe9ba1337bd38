//go:build linux

package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
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

// inotifyGuard bounds what the commands' processes hold of the host's
// inotify limits (see start), and tells a command when it kills one of
// its processes. It is safe for concurrent use.
type inotifyGuard struct {
	supervisors *supervisors
	jobs        *jobs
	log         *slog.Logger

	// once starts the guard, which runs until ctx is done (see stop).
	once sync.Once
	ctx  context.Context
	stop context.CancelFunc
	// notes holds, by supervisor, what the guard tells the foreground
	// command it runs (see tellCommand).
	notesMu sync.Mutex
	notes   map[int][]string
}

// newInotifyGuard returns a guard over the processes of supervisors'
// commands, not yet started.
func newInotifyGuard(supervisors *supervisors, jobs *jobs, log *slog.Logger) *inotifyGuard {
	ctx, stop := context.WithCancel(context.Background())
	return &inotifyGuard{supervisors: supervisors, jobs: jobs, log: log, ctx: ctx, stop: stop, notes: map[int][]string{}}
}

// start bounds, from now on, what this workspace's commands hold of
// the host's inotify limits to a 1/shares part; zero or unreadable limits
// leave them unbounded. Only the first call counts.
func (g *inotifyGuard) start(shares int) {
	g.once.Do(func() {
		share, ok := shareOf(shares)
		if !ok {
			return
		}
		go g.loop(share, shares)
	})
}

// loop checks every guardInterval until the guard is stopped.
func (g *inotifyGuard) loop(share inotifyShare, shares int) {
	tick := time.NewTicker(guardInterval)
	defer tick.Stop()
	pressed := 0
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-tick.C:
		}
		pressed = g.checkInotify(share, shares, pressed)
	}
}

// checkInotify kills the commands' processes that take this workspace
// past its share, the greediest first, and those that hide their
// descriptors when the host's limits have been reached for hiddenPatience
// scans; each kill is told to the command it belongs to. pressed is how
// many scans in a row found the limits reached with a process hidden; it
// returns the new count.
func (g *inotifyGuard) checkInotify(share inotifyShare, shares int, pressed int) int {
	procs, err := readProcs()
	if err != nil {
		return pressed
	}
	supervisors := g.supervisors.live()
	holders := readHolders(procs, supervisors, share.watches+1)
	kill, instances, watches := overShare(holders, share)
	for _, h := range kill {
		g.killHolder(h, fmt.Sprintf("this workspace's processes held %d inotify instances and %d watches (counted up to the share), past its share of %d and %d "+
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
		g.killHolder(h, "it hid its descriptors from the agent (PR_SET_DUMPABLE 0) while the host's per-user inotify limits were reached, "+
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
func (g *inotifyGuard) killHolder(h inotifyHolder, why string) {
	comm, _ := os.ReadFile("/proc/" + strconv.Itoa(h.pid) + "/comm")
	name := strconv.Quote(strings.TrimSuffix(string(comm), "\n")) // a name the command chose: no control characters pass
	signalPinned(h.proc, unix.SIGKILL)
	msg := fmt.Sprintf("wink-mcp killed process %d (%s): %s", h.pid, name, why)
	g.log.Warn("killed a process over the workspace's inotify share", "pid", h.pid, "reason", msg)
	g.tellCommand(h.supervisor, msg)
}

// tellCommand adds msg to the standard error of the command supervisor
// runs: a job's at once, a foreground command's with its result.
func (g *inotifyGuard) tellCommand(supervisor int, msg string) {
	if g.jobs.tell(supervisor, msg) {
		return
	}
	g.notesMu.Lock()
	defer g.notesMu.Unlock()
	if notes, ok := g.notes[supervisor]; ok {
		g.notes[supervisor] = append(notes, msg)
	}
}

// expectNotes starts keeping what the guard tells the foreground command
// supervisor runs (see tellCommand).
func (g *inotifyGuard) expectNotes(supervisor int) {
	g.notesMu.Lock()
	defer g.notesMu.Unlock()
	g.notes[supervisor] = []string{}
}

// takeNotes returns what was told the command supervisor ran, and stops
// keeping it.
func (g *inotifyGuard) takeNotes(supervisor int) []string {
	g.notesMu.Lock()
	defer g.notesMu.Unlock()
	notes := g.notes[supervisor]
	delete(g.notes, supervisor)
	return notes
}

// withNotes appends what the agent told a command to its standard error.
func withNotes(stderr string, notes []string) string {
	for _, n := range notes {
		stderr += "\n" + n + "\n"
	}
	return stderr
}
