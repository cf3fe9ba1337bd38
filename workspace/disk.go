package workspace

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/hostcmd"
)

// A session's directory (its /workspace, the upper directories of its
// overlays and its copies) is a filesystem of its own: a sparse ext4 image,
// loop-mounted over the directory, so the kernel stops the session at its
// disk limit with ENOSPC however it writes, and the host disk never fills.
// Mounting needs root; without it the limit is not enforced and the server
// says so at start.

// disksDir holds the images, under the instance directory, beside sessionsDir.
const disksDir = "disks"

// diskToolTimeout bounds mkfs and mount, which take milliseconds.
const diskToolTimeout = 30 * time.Second

// busyUnmountWait bounds the longest pause between tries to unmount a
// filesystem that is busy; the tries take about twice as long in all.
const busyUnmountWait = 128 * time.Millisecond

// keptMountTries is how often a kept disk is tried: a loop device can be
// taken between finding it free and attaching it, and one being released
// can still hold the image.
const keptMountTries = 4

// diskSbinDirs are searched for mkfs.ext4 and mount besides $PATH, which
// clients such as Claude Desktop start servers with a short $PATH.
var diskSbinDirs = []string{"/usr/sbin", "/sbin", "/usr/bin", "/bin"}

// ErrDiskLimitUnavailable is returned when disk limits cannot be enforced.
var ErrDiskLimitUnavailable = errors.New("per-session disk limit unavailable")

// diskTools are the programs a disk limit needs, found at start.
type diskTools struct{ mkfs, mount string }

// DiskLimitSupport returns nil when this host can enforce a per-session
// disk limit, else an error wrapping ErrDiskLimitUnavailable that says why
// and what to do.
func DiskLimitSupport() error {
	_, err := findDiskTools()
	return err
}

func lookTool(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, d := range diskSbinDirs {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// mountImage loop-mounts the ext4 image at dir with these options.
func (t diskTools) mountImage(ctx context.Context, image, dir, options string) error {
	return run(ctx, nil, t.mount, "-t", "ext4", "-o", "loop,"+options, image, dir)
}

// run runs a helper program with the environment hostcmd builds, passing
// it the variables keep names, and returns its output in its error.
func run(ctx context.Context, keep []string, name string, args ...string) error {
	out, err := hostcmd.Command(ctx, name, keep, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", filepath.Base(name), strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// mountPoints lists this process's mount points from /proc/self/mountinfo.
func mountPoints() ([]string, error) {
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
