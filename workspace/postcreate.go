package workspace

import (
	"context"
	"fmt"
	"time"

	"github.com/wink-mcp/wink-mcp/profiles"
	"github.com/wink-mcp/wink-mcp/wire"
)

// ErrPostCreateFailed is wrapped by the error of a session whose
// profile's post-create command (a project's postCreateCommand) failed.
var ErrPostCreateFailed = fmt.Errorf("the project's postCreateCommand failed")

// runPostCreate runs p's post-create command in a new container, in
// /workspace, as the session's user, with its environment and egress,
// bounded by its command timeout (a setup's when it has none); a failure ends the making of the
// container with the command's last output.
func runPostCreate(ctx context.Context, client *wire.Client, p *profiles.Profile) error {
	if p == nil || p.PostCreate == "" {
		return nil
	}
	timeout := commandTimeout(p)
	if timeout == 0 {
		timeout = profiles.DefaultSetupTimeout
	}
	var res ExecResult
	err := client.Call(ctx, wire.OpExec, wire.ExecArgs{Argv: []string{"sh", "-c", p.PostCreate}, TimeoutMillis: timeout.Milliseconds(),
		GraceMillis: (2 * time.Second).Milliseconds(), Capture: true, OutputLimit: buildOutputLimit}, &res)
	if err != nil {
		return fmt.Errorf("%w: it could not run: %v", ErrPostCreateFailed, err)
	}
	if res.ExitCode != 0 || res.TimedOut {
		status := fmt.Sprintf("exited with status %d", res.ExitCode)
		if res.TimedOut {
			status = fmt.Sprintf("was stopped after %s", timeout)
		}
		return fmt.Errorf("%w: it %s: %s\n%s", ErrPostCreateFailed, status, firstLine(p.PostCreate), outputTail(res))
	}
	return nil
}
