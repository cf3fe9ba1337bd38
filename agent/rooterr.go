package agent

import (
	"errors"
	"io/fs"
	"strings"
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
