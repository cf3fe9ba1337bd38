package tools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/display"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// CheckpointView describes a checkpoint.
type CheckpointView struct {
	ID         string    `json:"id" jsonschema_description:"The checkpoint's id in this workspace, for workspace_restore and workspace_checkpoint_diff."`
	Message    string    `json:"message,omitempty" jsonschema_description:"What it was taken for."`
	Auto       string    `json:"auto,omitempty" jsonschema_description:"Why the server took it by itself (before a restore, before the idle container was removed); absent for one you took."`
	Created    time.Time `json:"created" jsonschema_description:"When it was taken (UTC)."`
	Files      int       `json:"files" jsonschema_description:"Files it holds."`
	Dirs       int       `json:"dirs" jsonschema_description:"Directories it holds."`
	Symlinks   int       `json:"symlinks" jsonschema_description:"Symlinks it holds."`
	SizeBytes  int64     `json:"size_bytes" jsonschema_description:"The size of its files."`
	AddedBytes int64     `json:"added_bytes" jsonschema_description:"What it added to the store: what changed since the checkpoints before it."`
	Skipped    []string  `json:"skipped,omitempty" jsonschema_description:"Entries it could not hold (sockets, devices)."`
}

func checkpointView(cp workspace.Checkpoint) CheckpointView {
	return CheckpointView{ID: cp.ID, Message: cp.Message, Auto: cp.Auto, Created: cp.Created, Files: cp.Files, Dirs: cp.Dirs,
		Symlinks: cp.Symlinks, SizeBytes: cp.Bytes, AddedBytes: cp.Added, Skipped: cp.Skipped}
}

func (v CheckpointView) line() string {
	what := display.Text(v.Message)
	if v.Auto != "" {
		what = "(automatic: " + v.Auto + ")"
	}
	return fmt.Sprintf("%-5s %s  %d files, %s (+%s)  %s", v.ID, v.Created.Format(time.RFC3339), v.Files,
		checkpoints.FormatBytes(v.SizeBytes), checkpoints.FormatBytes(v.AddedBytes), what)
}

// WorkspaceCheckpointParams are workspace_checkpoint's arguments.
type WorkspaceCheckpointParams struct {
	Message string `json:"message,omitempty" jsonschema:"maxLength=500" jsonschema_description:"A short note of what this state is (\"tests pass\", \"before the refactor\")."`
}

// WorkspaceCheckpointResult is workspace_checkpoint's result.
type WorkspaceCheckpointResult struct {
	Checkpoint CheckpointView `json:"checkpoint" jsonschema_description:"The checkpoint taken."`
}

// Text names the checkpoint.
func (r WorkspaceCheckpointResult) Text() string {
	s := "checkpoint " + r.Checkpoint.ID + " saved: " + r.Checkpoint.line()
	if len(r.Checkpoint.Skipped) > 0 {
		s += "\nnot kept (a checkpoint cannot hold them): " + display.Texts(r.Checkpoint.Skipped, ", ")
	}
	return s
}

// Checkpointer is what the checkpoint tools take of a session's workspace.
type Checkpointer interface {
	// Checkpoint saves the whole /workspace as a new checkpoint.
	Checkpoint(ctx context.Context, message string) (workspace.Checkpoint, error)
	// Checkpoints lists the checkpoints, oldest first.
	Checkpoints(ctx context.Context) (workspace.CheckpointList, error)
	// Restore makes /workspace match a checkpoint, stopping what runs first.
	Restore(ctx context.Context, id string) (workspace.RestoreResult, error)
	// CheckpointDiff is the diff from one checkpoint to another, or to
	// workspace.CheckpointNow, under prefix.
	CheckpointDiff(ctx context.Context, from, to, prefix string) (workspace.DiffResult, error)
	// DeleteCheckpoints deletes checkpoints; it returns the bytes freed.
	DeleteCheckpoints(ctx context.Context, ids []string) (int64, error)
}

// WorkspaceCheckpoint returns the workspace_checkpoint tool.
func WorkspaceCheckpoint(workspaceFor WorkspaceFor) (server.ServerTool, error) {
	return build(workspaceFor, definition[Checkpointer, WorkspaceCheckpointParams, WorkspaceCheckpointResult]{
		name:  "workspace_checkpoint",
		title: "Save the workspace as a checkpoint",
		description: "Save the whole of /workspace (the changes to mounted host folders included) as a checkpoint you can go back " +
			"to with workspace_restore: every file's content and mode, symlinks, fifos and empty directories. Take one before a " +
			"risky change. Running commands keep running; a file one is writing at that moment is saved as it is then. Only what " +
			"changed since the last checkpoint is stored again. A checkpoint holds /workspace only: the data of services " +
			"(workspace_service) is never in it, and a restore leaves them as they are.",
		annotations: annotate(false, false, false),
		handle: func(ctx context.Context, ws Checkpointer, p WorkspaceCheckpointParams) (WorkspaceCheckpointResult, error) {
			cp, err := ws.Checkpoint(ctx, p.Message)
			return WorkspaceCheckpointResult{Checkpoint: checkpointView(cp)}, err
		},
	})
}

// WorkspaceCheckpointsParams are workspace_checkpoints' arguments: none.
type WorkspaceCheckpointsParams struct{}

// WorkspaceCheckpointsResult is workspace_checkpoints' result.
type WorkspaceCheckpointsResult struct {
	Checkpoints []CheckpointView `json:"checkpoints" jsonschema_description:"The checkpoints, oldest first."`
	StoreBytes  int64            `json:"store_bytes" jsonschema_description:"What all the checkpoints take, content they share counted once."`
	CapBytes    int64            `json:"cap_bytes" jsonschema_description:"The most they may take (0: no limit)."`
}

// Text lists the checkpoints.
func (r WorkspaceCheckpointsResult) Text() string {
	if len(r.Checkpoints) == 0 {
		return "no checkpoints yet; workspace_checkpoint takes one"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d checkpoints, %s in all", len(r.Checkpoints), checkpoints.FormatBytes(r.StoreBytes))
	if r.CapBytes > 0 {
		fmt.Fprintf(&b, " of %s", checkpoints.FormatBytes(r.CapBytes))
	}
	for _, c := range r.Checkpoints {
		b.WriteString("\n" + c.line())
	}
	return b.String()
}

// WorkspaceCheckpoints returns the workspace_checkpoints tool.
func WorkspaceCheckpoints(workspaceFor WorkspaceFor) (server.ServerTool, error) {
	return build(workspaceFor, definition[Checkpointer, WorkspaceCheckpointsParams, WorkspaceCheckpointsResult]{
		name:        "workspace_checkpoints",
		title:       "List the workspace's checkpoints",
		description: "List the checkpoints of this workspace, oldest first, with what each holds and what it added to the store.",
		annotations: annotate(true, false, true),
		handle: func(ctx context.Context, ws Checkpointer, _ WorkspaceCheckpointsParams) (WorkspaceCheckpointsResult, error) {
			list, err := ws.Checkpoints(ctx)
			r := WorkspaceCheckpointsResult{Checkpoints: []CheckpointView{}, StoreBytes: list.StoreBytes, CapBytes: list.CapBytes}
			for _, cp := range list.Checkpoints {
				r.Checkpoints = append(r.Checkpoints, checkpointView(cp))
			}
			return r, err
		},
	})
}

// WorkspaceRestoreParams are workspace_restore's arguments.
type WorkspaceRestoreParams struct {
	Checkpoint string `json:"checkpoint" jsonschema:"maxLength=10,pattern=^c[1-9][0-9]*$" jsonschema_description:"The checkpoint to go back to, such as c3 (workspace_checkpoints lists them)."`
}

// WorkspaceRestoreResult is workspace_restore's result.
type WorkspaceRestoreResult struct {
	Checkpoint      string `json:"checkpoint" jsonschema_description:"The checkpoint /workspace now matches."`
	Before          string `json:"before,omitempty" jsonschema_description:"The automatic checkpoint of the state the restore replaced: restore it to undo this restore."`
	StoppedCommands int    `json:"stopped_commands" jsonschema_description:"Commands that were running and were stopped first."`
	StoppedJobs     int    `json:"stopped_jobs" jsonschema_description:"Background jobs that were running and were stopped first."`
	Removed         int    `json:"removed" jsonschema_description:"Entries removed (a removed directory counts once)."`
	Written         int    `json:"written" jsonschema_description:"Files, directories, symlinks and fifos written or made."`
	Unchanged       int    `json:"unchanged" jsonschema_description:"Entries that already matched."`
	DurationMillis  int64  `json:"duration_ms" jsonschema_description:"How long the restore took."`
}

// Text says what the restore did and how to undo it.
func (r WorkspaceRestoreResult) Text() string {
	s := fmt.Sprintf("/workspace is back at checkpoint %s: %d removed, %d written, %d unchanged, in %d ms", r.Checkpoint, r.Removed, r.Written, r.Unchanged, r.DurationMillis)
	if r.StoppedCommands+r.StoppedJobs > 0 {
		s += fmt.Sprintf("\nstopped first: %d running commands and %d background jobs", r.StoppedCommands, r.StoppedJobs)
	}
	if r.Before != "" {
		s += "\nthe state it replaced is checkpoint " + r.Before + " (restore it to undo)"
	}
	return s
}

// WorkspaceRestore returns the workspace_restore tool.
func WorkspaceRestore(workspaceFor WorkspaceFor) (server.ServerTool, error) {
	return build(workspaceFor, definition[Checkpointer, WorkspaceRestoreParams, WorkspaceRestoreResult]{
		name:  "workspace_restore",
		title: "Put the workspace back as a checkpoint saved it",
		description: "Make /workspace exactly as a checkpoint saved it: files, modes, symlinks, fifos and empty directories, " +
			"and nothing that was added since. Running commands and background jobs are stopped first (the result counts " +
			"them), and the state replaced is saved as an automatic checkpoint, so a restore can be undone; when that checkpoint " +
			"cannot be saved, or the checkpoint would not fit the workspace's disk, the restore is refused and nothing changes. " +
			"Processes are not restored: start what should run again.",
		annotations: annotate(false, true, true),
		handle: func(ctx context.Context, ws Checkpointer, p WorkspaceRestoreParams) (WorkspaceRestoreResult, error) {
			r, err := ws.Restore(ctx, p.Checkpoint)
			if err != nil {
				return WorkspaceRestoreResult{}, err
			}
			return WorkspaceRestoreResult{Checkpoint: r.Checkpoint.ID, Before: r.Before.ID, StoppedCommands: r.StoppedCommands,
				StoppedJobs: r.StoppedJobs, Removed: r.Removed, Written: r.Written, Unchanged: r.Unchanged, DurationMillis: r.Duration.Milliseconds()}, nil
		},
	})
}

// WorkspaceCheckpointDiffParams are workspace_checkpoint_diff's arguments.
type WorkspaceCheckpointDiffParams struct {
	From   string `json:"from" jsonschema:"maxLength=10,pattern=^c[1-9][0-9]*$" jsonschema_description:"The older checkpoint, such as c1."`
	To     string `json:"to,omitempty" jsonschema:"maxLength=10,default=now" jsonschema_description:"The newer checkpoint, or now (the default) for /workspace as it is."`
	Path   string `json:"path,omitempty" jsonschema:"maxLength=1295" jsonschema_description:"Only changes at or under this path, relative to /workspace; empty for all."`
	Offset int    `json:"offset,omitempty" jsonschema:"minimum=0,default=0" jsonschema_description:"First line of the diff to return, 0-based."`
	Limit  int    `json:"limit,omitempty" jsonschema:"minimum=1,maximum=2000,default=2000" jsonschema_description:"How many lines to return, 1 to 2000."`
}

// Validate checks to and normalises the path.
func (p *WorkspaceCheckpointDiffParams) Validate() (err error) {
	if p.To == "" {
		p.To = workspace.CheckpointNow
	}
	if p.To != workspace.CheckpointNow && !checkpoints.ValidID(p.To) {
		return fmt.Errorf("to: must be a checkpoint id such as c2, or now (got %q)", p.To)
	}
	p.Path, err = cleanPath("path", p.Path, true)
	return err
}

// WorkspaceCheckpointDiff returns the workspace_checkpoint_diff tool.
func WorkspaceCheckpointDiff(workspaceFor WorkspaceFor) (server.ServerTool, error) {
	return build(workspaceFor, definition[Checkpointer, WorkspaceCheckpointDiffParams, WorkspaceDiffResult]{
		name:  "workspace_checkpoint_diff",
		title: "Show what changed between checkpoints",
		description: "Show what changed in /workspace from one checkpoint to another, or to now, as a unified diff in git's " +
			"format, paths relative to /workspace: `limit` lines (1-2000, default 2000) from the 0-based line `offset`. " +
			"Binary files, files that are not UTF-8 and files over 1 MiB are listed, not shown; a diff over 16 MiB stops " +
			"there (narrow it with path). Only what changed is read.",
		annotations: annotate(true, false, true),
		handle: func(ctx context.Context, ws Checkpointer, p WorkspaceCheckpointDiffParams) (WorkspaceDiffResult, error) {
			d, err := ws.CheckpointDiff(ctx, p.From, p.To, p.Path)
			if err != nil {
				return WorkspaceDiffResult{}, err
			}
			return pageOfDiff(d, p.Offset, p.Limit), nil
		},
	})
}

// WorkspaceCheckpointDeleteParams are workspace_checkpoint_delete's arguments.
type WorkspaceCheckpointDeleteParams struct {
	Checkpoints []string `json:"checkpoints" jsonschema:"minItems=1,maxItems=100" jsonschema_description:"The checkpoints to delete, such as [\"c1\", \"c2\"]."`
}

// Validate checks every ID.
func (p *WorkspaceCheckpointDeleteParams) Validate() error {
	for i, id := range p.Checkpoints {
		if !checkpoints.ValidID(id) {
			return fmt.Errorf("checkpoints[%d]: must be a checkpoint id such as c1 (got %q)", i, id)
		}
	}
	return nil
}

// WorkspaceCheckpointDeleteResult is workspace_checkpoint_delete's result.
type WorkspaceCheckpointDeleteResult struct {
	Deleted    []string `json:"deleted" jsonschema_description:"The checkpoints deleted."`
	FreedBytes int64    `json:"freed_bytes" jsonschema_description:"What the store gave back: content no remaining checkpoint holds."`
}

// Text says what was deleted.
func (r WorkspaceCheckpointDeleteResult) Text() string {
	return fmt.Sprintf("deleted %s; %s freed", strings.Join(r.Deleted, ", "), checkpoints.FormatBytes(r.FreedBytes))
}

// WorkspaceCheckpointDelete returns the workspace_checkpoint_delete tool.
func WorkspaceCheckpointDelete(workspaceFor WorkspaceFor) (server.ServerTool, error) {
	return build(workspaceFor, definition[Checkpointer, WorkspaceCheckpointDeleteParams, WorkspaceCheckpointDeleteResult]{
		name:        "workspace_checkpoint_delete",
		title:       "Delete checkpoints",
		description: "Delete checkpoints you no longer need, freeing what only they hold. The files in /workspace do not change.",
		annotations: annotate(false, true, false),
		handle: func(ctx context.Context, ws Checkpointer, p WorkspaceCheckpointDeleteParams) (WorkspaceCheckpointDeleteResult, error) {
			freed, err := ws.DeleteCheckpoints(ctx, p.Checkpoints)
			return WorkspaceCheckpointDeleteResult{Deleted: p.Checkpoints, FreedBytes: freed}, err
		},
	})
}
