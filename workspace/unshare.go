package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/wink-mcp/wink-mcp/hostcmd"
)

// unshareTimeout bounds `podman unshare rm`, as long as the disk tools
// (mkfs, mount) are given.
const unshareTimeout = 30 * time.Second

// removeAll removes dir and everything in it. Under rootless Podman the
// container's users are this user's subordinate uids, whose files (and the
// overlay work directories the kernel makes) this user may not delete;
// those are removed from inside this user's user namespace, `podman
// unshare`, where the user is root over them.
func removeAll(dir string) error {
	err := os.RemoveAll(dir)
	if err == nil || os.Geteuid() == 0 || !errors.Is(err, fs.ErrPermission) {
		return err
	}
	podman := hostcmd.Look("podman")
	if podman == "" {
		return fmt.Errorf("%w (files of the rootless container's user are removed with `podman unshare`, and the podman command is not installed)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), unshareTimeout)
	defer cancel()
	// --remote=false and an environment without CONTAINER_HOST and the
	// like: the server may talk to the user's service through a URL, but
	// unshare only works as the local client.
	if uerr := hostcmd.Run(ctx, hostcmd.Podman, podman, "--remote=false", "unshare", "rm", "-rf", "--", dir); uerr != nil {
		return fmt.Errorf("%w; removing it in the user namespace failed too: %v", err, uerr)
	}
	return nil
}
