// Package forkcopy copies a workspace's files for a fork: a session's disk
// image, frozen for the moment it is read so that the copy is one instant
// of the filesystem, or, where disks are not limited (rootless Podman,
// --disk-limit 0), its directory tree, file by file. It copies data; it
// never links it, so that no write to a fork reaches the source or
// another fork.
//
// It holds no state and no lock: the caller (package workspace) keeps the
// source's calls out of its files while it copies.
package forkcopy

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/wink-mcp/wink-mcp/workspace/disk"
)

// Command is the internal role of wink-mcp that runs Tree in another
// process: `wink-mcp fork-copy SRC DST`, which rootless Podman's user
// namespace runs (`podman unshare`), where the copy keeps the owners.
const Command = "fork-copy"

// maxRereads bounds how often a file a command rewrites while it is
// copied is copied again before the copy gives up on it.
const maxRereads = 3

// ErrUnsupported says this platform cannot copy a workspace for a fork.
var ErrUnsupported = errors.New("forking a workspace needs Linux")

// Image copies the disk image src, the filesystem mounted at mountPoint,
// to each of dsts, which must not exist: the filesystem is frozen
// (FIFREEZE) while the first copy is read, so every copy is the same
// instant of it, with no write half made; the others are copied from the
// first after the source is thawed. Holes stay holes.
func Image(src, mountPoint string, dsts []string) error {
	if len(dsts) == 0 {
		return nil
	}
	thaw, err := disk.Freeze(mountPoint)
	if err != nil {
		return fmt.Errorf("freezing the workspace's filesystem for the copy: %w", err)
	}
	err = Sparse(src, dsts[0])
	if terr := thaw(); err == nil && terr != nil {
		err = fmt.Errorf("thawing the workspace's filesystem: %w", terr)
	}
	if err != nil {
		return err
	}
	for _, dst := range dsts[1:] {
		if err := Sparse(dsts[0], dst); err != nil {
			return err
		}
	}
	return nil
}

// Sparse copies the file src to dst, which must not exist, with its holes,
// mode 0600.
func Sparse(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	err = copyExtents(in, out, info.Size())
	if err == nil {
		err = out.Truncate(info.Size())
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dst)
		return fmt.Errorf("copying %s: %w", src, err)
	}
	return nil
}

// copyPlain copies n bytes of in from off to out at the same offset
// through this process.
func copyPlain(in, out *os.File, off, n int64) error {
	if _, err := out.Seek(off, io.SeekStart); err != nil {
		return err
	}
	copied, err := io.Copy(out, io.NewSectionReader(in, off, n))
	if err == nil && copied != n {
		err = fmt.Errorf("read %d of %d bytes at %d", copied, n, off)
	}
	return err
}
