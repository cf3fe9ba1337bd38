//go:build linux

package agent

import (
	"errors"
	"io/fs"
	"strings"
	"syscall"

	"github.com/wink-mcp/wink-mcp/wire"
)

// isEscape reports whether err is os.Root refusing a path that leads outside
// the root (through "..", an absolute symlink, or a symlink to a parent).
// os.Root does not export this error, so its text is matched; a test pins it.
func isEscape(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

// unwrapPath strips the *fs.PathError wrapper, whose path is the agent's
// view and would only confuse a model reading the message.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// pathError turns a failed operation on a workspace path into a message
// that names the path (as the model gave it) and what to do.
func pathError(p string, err error) *wire.Error {
	shown := p
	if shown == "" {
		shown = "."
	}
	switch {
	case isEscape(err):
		return wire.Errorf(wire.CodeInvalid, "%q goes through a symbolic link that leads outside /workspace; the file tools stay inside it", shown)
	case errors.Is(err, fs.ErrNotExist):
		return wire.Errorf(wire.CodeNotFound, "%q does not exist in /workspace", shown)
	case errors.Is(err, syscall.ENOTDIR):
		return wire.Errorf(wire.CodeInvalid, "a parent of %q is not a directory", shown)
	case errors.Is(err, syscall.ELOOP):
		return wire.Errorf(wire.CodeInvalid, "%q: too many levels of symbolic links", shown)
	case errors.Is(err, fs.ErrPermission):
		return wire.Errorf(wire.CodeInvalid, "%q: permission denied", shown)
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return wire.Errorf(wire.CodeInvalid, "no space left in /workspace while writing %q; delete files to make room (nothing was changed)", shown)
	case errors.Is(err, syscall.EROFS):
		return wire.Errorf(wire.CodeInvalid, "%q is in a read-only folder (a host folder mounted :ro; the workspace prompt lists them) and cannot be changed; copy it elsewhere in /workspace to work on it", shown)
	case errors.Is(err, syscall.EBUSY):
		return wire.Errorf(wire.CodeInvalid, "%q is, or holds, a host folder mounted into the workspace, which cannot be removed or replaced; change the files inside it instead", shown)
	case errors.Is(err, syscall.EISDIR):
		return wire.Errorf(wire.CodeInvalid, "%q is a directory", shown)
	}
	return wire.Errorf(wire.CodeInvalid, "%q: %v", shown, unwrapPath(err))
}
