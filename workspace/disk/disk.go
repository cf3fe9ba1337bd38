// Package disk makes a session's directory (its /workspace, the upper
// directories of its overlays and its copies) a filesystem of its own: a
// sparse ext4 image, loop-mounted over the directory, so the kernel stops
// the session at its disk limit with ENOSPC however it writes, and the
// host disk never fills. Mounting needs root; without it the limit is not
// enforced and the server says so at start.
//
// It holds no state and no lock: each call works on the image and the
// directory it is given, and the caller (package workspace) serialises
// the calls for one session under that session's lock.
package disk

import (
	"bufio"
	"context"
	"errors"
	"os"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/hostcmd"
)

// diskToolTimeout bounds mkfs and mount, which take milliseconds.
const diskToolTimeout = 30 * time.Second

// busyUnmountWait bounds the longest pause between tries to unmount a
// filesystem that is busy; the tries take about twice as long in all.
const busyUnmountWait = 128 * time.Millisecond

// keptMountTries is how often a kept disk is tried: a loop device can be
// taken between finding it free and attaching it, and one being released
// can still hold the image.
const keptMountTries = 4

// ErrLimitUnavailable is returned when disk limits cannot be enforced.
var ErrLimitUnavailable = errors.New("per-session disk limit unavailable")

// Tools are the programs a disk limit needs, found at start (FindTools).
type Tools struct{ mkfs, mount string }

// MountTool returns the tools with the mount program alone, which reading
// a kept image (MountReadOnly) needs; ok is false when it is not installed.
func MountTool() (t Tools, ok bool) {
	t.mount = hostcmd.Look("mount")
	return t, t.mount != ""
}

// mountImage loop-mounts the ext4 image at dir with these options.
func (t Tools) mountImage(ctx context.Context, image, dir, options string) error {
	return hostcmd.Run(ctx, nil, t.mount, "-t", "ext4", "-o", "loop,"+options, image, dir)
}

// MountPoints lists this process's mount points from /proc/self/mountinfo.
func MountPoints() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 4 {
			points = append(points, unescapeMountinfo(fields[4]))
		}
	}
	return points, sc.Err()
}

// unescapeMountinfo undoes the octal escapes (\040 for a space) the kernel
// writes in mountinfo paths.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }
