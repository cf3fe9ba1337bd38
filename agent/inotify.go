//go:build linux

package agent

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// inotifyShare is what one workspace's processes may hold of the inotify
// instances and watches the kernel counts per user: every container that
// runs as one uid (all of them, by default), or whose user namespace one
// uid made (rootless Podman), draws on the same host-wide count, so
// without a share one workspace could leave every other one unwatched.
type inotifyShare struct {
	instances, watches int
}

// shareOf returns a 1/shares part of the host's limits, read from
// /proc/sys/fs/inotify (the initial user namespace's, which the kernel
// enforces whatever namespace the container is in), and whether they
// could be read.
func shareOf(shares int) (inotifyShare, bool) {
	read := func(name string) int {
		b, err := os.ReadFile("/proc/sys/fs/inotify/" + name)
		if err != nil {
			return 0
		}
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return n
	}
	instances, watches := read("max_user_instances"), read("max_user_watches")
	if shares <= 0 || instances <= 0 || watches <= 0 {
		return inotifyShare{}, false
	}
	return inotifyShare{instances: max(1, instances/shares), watches: max(1, watches/shares)}, true
}

// inotifyHolder is a process of a command (a descendant of a supervisor)
// and what it holds.
type inotifyHolder struct {
	proc
	supervisor         int // the supervisor whose command it belongs to
	instances, watches int
	// hidden says its descriptors could not be read: it made itself
	// undumpable (PR_SET_DUMPABLE 0), which no ordinary program needs.
	hidden bool
}

// maxFDsRead bounds the descriptors one scan reads, summed over every
// process, so a process holding thousands of descriptors costs a scan a
// bounded time.
const maxFDsRead = 100_000

// readHolders lists the processes of commands that hold inotify
// descriptors or hide them. supervisors are the agent's own; the
// processes below them are the commands'. Watches are counted up to
// maxWatches per process: past the share, the exact number changes
// nothing.
func readHolders(procs []proc, supervisors map[int]struct{}, maxWatches int) []inotifyHolder {
	owner := ownersOf(procs, supervisors)
	var out []inotifyHolder
	budget := maxFDsRead
	for _, p := range procs {
		sup, ok := owner[p.pid]
		if !ok || p.zombie || budget <= 0 {
			continue
		}
		h := inotifyHolder{proc: p, supervisor: sup}
		dir := "/proc/" + strconv.Itoa(p.pid) + "/fd"
		fds, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrPermission) {
			h.hidden = true
			out = append(out, h)
			continue
		}
		for _, fd := range fds {
			if budget--; budget < 0 {
				break
			}
			if target, err := os.Readlink(dir + "/" + fd.Name()); err != nil || target != "anon_inode:inotify" {
				continue
			}
			h.instances++
			h.watches += countWatches("/proc/"+strconv.Itoa(p.pid)+"/fdinfo/"+fd.Name(), maxWatches-h.watches)
		}
		if h.instances > 0 {
			out = append(out, h)
		}
	}
	return out
}

// ownersOf maps each process below a supervisor to that supervisor.
func ownersOf(procs []proc, supervisors map[int]struct{}) map[int]int {
	parent := make(map[int]int, len(procs))
	for _, p := range procs {
		parent[p.pid] = p.ppid
	}
	owner := map[int]int{}
	for _, p := range procs {
		// A chain longer than the process count is a loop read while pids
		// were reused: it belongs to nobody.
		for up, steps := p.ppid, 0; up > 0 && steps <= len(procs); up, steps = parent[up], steps+1 {
			if _, ok := supervisors[up]; ok {
				owner[p.pid] = up
				break
			}
		}
	}
	return owner
}

// countWatches counts the watches an inotify descriptor's fdinfo lists,
// one "inotify wd:" line each, reading no further than upTo of them.
func countWatches(fdinfo string, upTo int) int {
	f, err := os.Open(fdinfo)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for n <= upTo && sc.Scan() {
		if bytes.HasPrefix(sc.Bytes(), []byte("inotify wd:")) {
			n++
		}
	}
	return n
}

// overShare picks the holders to kill so that what the rest hold is
// within share: the greediest first (by its part of the share used).
// Hidden holders are never picked here (see Agent.guardInotify).
func overShare(holders []inotifyHolder, share inotifyShare) (kill []inotifyHolder, instances, watches int) {
	for _, h := range holders {
		instances, watches = instances+h.instances, watches+h.watches
	}
	left := make([]inotifyHolder, 0, len(holders))
	for _, h := range holders {
		if !h.hidden {
			left = append(left, h)
		}
	}
	used := func(h inotifyHolder) float64 {
		return max(float64(h.instances)/float64(share.instances), float64(h.watches)/float64(share.watches))
	}
	in, wa := instances, watches
	for (in > share.instances || wa > share.watches) && len(left) > 0 {
		g := 0
		for i := range left {
			if used(left[i]) > used(left[g]) {
				g = i
			}
		}
		kill = append(kill, left[g])
		in, wa = in-left[g].instances, wa-left[g].watches
		left = append(left[:g], left[g+1:]...)
	}
	return kill, instances, watches
}
