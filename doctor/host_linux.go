package doctor

import (
	"errors"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

func (localHost) cgroupLayout() string {
	var st unix.Statfs_t
	if unix.Statfs("/sys/fs/cgroup", &st) != nil {
		return cgroupsUnknown
	}
	switch st.Type {
	case unix.CGROUP2_SUPER_MAGIC:
		return cgroupsUnified
	case unix.TMPFS_MAGIC:
		if unix.Statfs("/sys/fs/cgroup/unified", &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			return cgroupsHybrid
		}
		return cgroupsLegacy
	}
	return cgroupsUnknown
}

func (localHost) hardLimits() (nofile, nproc uint64, err error) {
	var f, p unix.Rlimit
	err = errors.Join(unix.Getrlimit(unix.RLIMIT_NOFILE, &f), unix.Getrlimit(unix.RLIMIT_NPROC, &p))
	return f.Max, p.Max, err
}

func (localHost) freeBytes(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

func (localHost) inotifyLimits() (watches, instances uint64, err error) {
	read := func(name string) uint64 {
		b, rerr := os.ReadFile("/proc/sys/fs/inotify/" + name)
		if rerr != nil {
			err = errors.Join(err, rerr)
			return 0
		}
		n, perr := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		err = errors.Join(err, perr)
		return n
	}
	return read("max_user_watches"), read("max_user_instances"), err
}
