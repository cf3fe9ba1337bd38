package workspace

import (
	"fmt"
	"strings"

	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/wire"
	"github.com/wink-mcp/wink-mcp/workspace/checkpoint"
)

// DiskFullNote says which filesystem a command left full (see
// wire.DiskFull), what takes the space and which calls free it, the same
// advice a tool error that finds the disk full gets; for a job asked
// about later, one that is no longer full is said to have been. what
// names the command ("the command", "the job"); "" for no report.
func DiskFullNote(d *wire.DiskFull, what string) string {
	if d == nil {
		return ""
	}
	var notes []string
	if d.WorkspaceFull {
		if d.Workspace.Full() {
			notes = append(notes, checkpoint.DiskAdvice(d.Workspace, -1)+".")
		} else {
			notes = append(notes, fmt.Sprintf("the workspace's disk was full when %s ended; it has %s free now.", what, checkpoints.FormatBytes(d.Workspace.FreeBytes)))
		}
	}
	if d.TmpFull && d.Tmp != nil {
		notes = append(notes, tmpAdvice(*d.Tmp, what))
	}
	return strings.Join(notes, " ")
}

// tmpAdvice says how full the temporary directory's filesystem is, what
// takes it and how to free it: only a command reaches it.
func tmpAdvice(d wire.DiskSpace, what string) string {
	var b strings.Builder
	switch {
	case !d.Full():
		return fmt.Sprintf("/tmp was full when %s ended; it has %s free now.", what, checkpoints.FormatBytes(d.FreeBytes))
	case d.NoFreeFiles():
		fmt.Fprintf(&b, "/tmp can make no more files: all %d inodes of its filesystem are in use", d.TotalFiles)
	default:
		fmt.Fprintf(&b, "/tmp, a filesystem of %s of its own, has %s free", checkpoints.FormatBytes(d.TotalBytes), checkpoints.FormatBytes(d.FreeBytes))
	}
	b.WriteString(checkpoint.TopNote(d, "in /tmp"))
	b.WriteString(". Free it with podman_shell, removing what you no longer need there (rm -r; the file tools reach only /workspace).")
	return b.String()
}
