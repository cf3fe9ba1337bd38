// Package hostcmd starts the helper programs the server runs on this
// machine (podman unshare, mkfs.ext4, mount, git, criu) with an
// environment the server builds rather than the one it inherited. A
// variable the user's shell exports for their own use changes what such
// a program does: CONTAINER_HOST makes `podman unshare` a remote client
// that refuses to run, MKE2FS_CONFIG changes the filesystem mkfs makes,
// LIBMOUNT_FSTAB the table mount reads, GIT_DIR the repository git reads.
// So a helper gets PATH, a fixed locale and only the variables its caller
// names as the ones it needs.
package hostcmd

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// sbinDirs are appended to PATH: clients such as Claude Desktop start
// servers with a short one that lacks the system's tools.
var sbinDirs = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// Variables a helper may be given from this process's environment.
var (
	// Podman are what a local podman command (podman unshare) needs to
	// find this user's own storage, configuration and runtime directory,
	// as the user's Podman service does. CONTAINER_HOST,
	// CONTAINER_CONNECTION, CONTAINERS_CONF and PODMAN_* are left out:
	// they would make it another client, or a client of another service.
	Podman = []string{"HOME", "USER", "LOGNAME", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "TMPDIR"}
	// GitConfig are what git needs to find the user's own configuration
	// (their identity), and nothing that points it at another repository.
	GitConfig = []string{"HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM"}
)

// Command returns the command name with args, bounded by ctx, whose
// environment is Env(os.Environ(), keep...). The caller runs it as it
// would any exec.Cmd.
func Command(ctx context.Context, name string, keep []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = Env(os.Environ(), keep...)
	return cmd
}

// Env returns a helper's environment: PATH (environ's, then the system's
// tool directories it lacks), LC_ALL=C so that the messages the server
// quotes are the same everywhere, and the variables of environ named in
// keep, when set. Nothing else of environ is passed.
func Env(environ []string, keep ...string) []string {
	values := map[string]string{}
	for _, kv := range environ {
		if name, value, ok := strings.Cut(kv, "="); ok {
			values[name] = value
		}
	}
	out := []string{"PATH=" + searchPath(values["PATH"]), "LC_ALL=C"}
	for _, name := range keep {
		if v, ok := values[name]; ok && name != "PATH" && name != "LC_ALL" {
			out = append(out, name+"="+v)
		}
	}
	return out
}

// searchPath is path with the system's tool directories it lacks appended.
func searchPath(path string) string {
	dirs := strings.FieldsFunc(path, func(r rune) bool { return r == ':' })
	for _, d := range sbinDirs {
		if !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return strings.Join(dirs, ":")
}
