package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/wink-mcp/wink-mcp/hostcmd"
	"github.com/wink-mcp/wink-mcp/workspace/forkcopy"
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

// copyTree copies the directory src to dst, which must not exist, owners
// included (forkcopy.Tree): as root, here; under rootless Podman, whose
// container users are this user's subordinate uids, in this user's user
// namespace (`podman unshare`, running this binary's fork-copy role),
// where the user is root over them and a copy keeps them; a copy made
// outside would be this user's, which is root in the container, and the
// container's user could not write it.
func copyTree(src, dst string) error {
	if os.Geteuid() == 0 {
		return forkcopy.Tree(src, dst)
	}
	podman := hostcmd.Look("podman")
	if podman == "" {
		return errors.New("copying a rootless workspace keeps its owners in the user's namespace (`podman unshare`), and the podman command is not installed")
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this binary, to copy the workspace in the user namespace: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*unshareTimeout)
	defer cancel()
	if err := hostcmd.Run(ctx, hostcmd.Podman, podman, "--remote=false", "unshare", self, forkcopy.Command, src, dst); err != nil {
		return fmt.Errorf("copying the workspace's files in the user namespace: %w", err)
	}
	return nil
}
