package workspace

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// exitingHolder returns the process that took the flock on the file at
// path when that process has exited, or is exiting, with the lock still
// held (by its last threads, or by a process that inherited the
// descriptor); 0 when the lock is free, its holder lives, or the kernel
// does not say (a pid of another namespace).
func exitingHolder(path string) int {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return 0
	}
	locks, err := os.ReadFile("/proc/locks")
	if err != nil {
		return 0
	}
	pid := flockPID(locks, fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino))
	if pid <= 0 || !processExiting(pid) {
		return 0
	}
	return pid
}

// flockPID finds in /proc/locks the process that took the flock held on
// the file the kernel names inode ("major:minor:number"), 0 for none.
func flockPID(locks []byte, inode string) int {
	sc := bufio.NewScanner(bytes.NewReader(locks))
	for sc.Scan() {
		// "1: FLOCK  ADVISORY  WRITE 1234 fe:00:9978033 0 EOF"; waiters have "->" after the number.
		f := strings.Fields(sc.Text())
		if len(f) < 6 || f[1] != "FLOCK" || f[5] != inode {
			continue
		}
		pid, err := strconv.Atoi(f[4])
		if err != nil {
			return 0
		}
		return pid
	}
	return 0
}

// processExiting reports whether pid has exited (it is gone, or its main
// thread is a zombie).
func processExiting(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH)
	}
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 || end+2 >= len(stat) {
		return false
	}
	state := stat[end+2]
	return state == 'Z' || state == 'X'
}
