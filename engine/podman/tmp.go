//go:build containers_image_openpgp

package podman

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/containers/podman/v5/pkg/api/handlers"
	"github.com/containers/podman/v5/pkg/bindings/containers"
	dockerContainer "github.com/docker/docker/api/types/container"
)

// clearScript empties each directory it is given, dot files included: a
// pattern that matches nothing stays as written, which rm -f ignores.
const clearScript = `for d; do rm -rf "$d"/* "$d"/.[!.]* "$d"/..?*; done`

// ClearDirs implements engine.Engine with an exec session of Podman's, not
// the agent: it runs in the container or nowhere. It is bounded like a
// commit, since what a setup left there may be gigabytes. The session is
// attached, which is how it is waited for: a detached one stays "running"
// in Podman 4.3's inspect after its process has ended.
func (e *Engine) ClearDirs(ctx context.Context, name string, dirs []string) (err error) {
	connCtx, err := e.connect(ctx)
	if err != nil {
		return err
	}
	c, end := within(ctx, connCtx, e.pullTimeout)
	defer end(&err)
	what := fmt.Sprintf("emptying %s of %s", strings.Join(dirs, " and "), name)
	id, err := containers.ExecCreate(c, name, &handlers.ExecCreateConfig{ExecOptions: dockerContainer.ExecOptions{
		User: "0:0", AttachStdout: true, AttachStderr: true, Cmd: append([]string{"sh", "-c", clearScript, "sh"}, dirs...)}})
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer func() {
		rmCtx, cancel := context.WithTimeout(connCtx, e.apiTimeout)
		_ = containers.ExecRemove(rmCtx, id, nil)
		cancel()
	}()
	var output limitedBuffer
	opts := new(containers.ExecStartAndAttachOptions).WithOutputStream(&output).WithErrorStream(&output).
		WithAttachOutput(true).WithAttachError(true)
	if err := containers.ExecStartAndAttach(c, id, opts); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	session, err := containers.ExecInspect(c, id, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if session.ExitCode != 0 {
		return fmt.Errorf("%s: rm exited with status %d: %s", what, session.ExitCode, output.String())
	}
	return nil
}

// limitedBuffer keeps the first 4 KiB written to it, for an error.
type limitedBuffer struct{ bytes.Buffer }

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := 4<<10 - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
