package kubernetes

import (
	"context"
	"io"
)

// CopyIn is not available: copies of host folders need the Pod's files
// reachable from this machine.
func (e *Engine) CopyIn(context.Context, string, string, io.Reader) error {
	return notAvailable("copying host folders into a workspace (--mount ...:copy)")
}

// CopyOut is not available: see CopyIn.
func (e *Engine) CopyOut(context.Context, string, string, io.Writer) error {
	return notAvailable("copying a workspace's files out (exports of mounted folders' changes)")
}
