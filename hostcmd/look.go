package hostcmd

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// lookDirs are searched for a helper besides $PATH, which clients such as
// Claude Desktop start servers with a short $PATH.
var lookDirs = []string{"/usr/sbin", "/sbin", "/usr/bin", "/bin"}

// Look returns the path of the helper program name, found in $PATH or in
// the system's tool directories, or "" when it is in neither.
func Look(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, d := range lookDirs {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// Run runs a helper program with the environment Command builds, passing
// it the variables keep names, and returns its output in its error.
func Run(ctx context.Context, keep []string, name string, args ...string) error {
	out, err := Command(ctx, name, keep, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", filepath.Base(name), strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
