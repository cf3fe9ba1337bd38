package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/changes"
	"github.com/wink-mcp/wink-mcp/display"
	"github.com/wink-mcp/wink-mcp/wire"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// maxChangesListed bounds workspace_changes' list.
const maxChangesListed = 2000

// MountView describes a host folder in the workspace.
type MountView struct {
	HostPath string `json:"host_path" jsonschema_description:"The folder on the host."`
	Path     string `json:"path" jsonschema_description:"Where it appears, relative to /workspace."`
	Mode     string `json:"mode" jsonschema_description:"overlay (editable; the host copy never changes), ro (read-only) or copy (a filtered copy)."`
}

func mountViews(ms []workspace.MountInfo) []MountView {
	out := make([]MountView, 0, len(ms))
	for _, m := range ms {
		out = append(out, MountView{HostPath: m.HostPath, Path: m.Path, Mode: string(m.Mode)})
	}
	return out
}

// ChangeView is one changed path.
type ChangeView struct {
	Path         string `json:"path" jsonschema_description:"The path, relative to /workspace."`
	Status       string `json:"status" jsonschema_description:"created, modified or deleted."`
	Kind         string `json:"kind" jsonschema_description:"file, symlink, other (a fifo, socket or device, which a patch cannot carry), or directory: one entry for many paths the patch leaves out (a new directory the folder's .gitignore ignores, the new ignored files of a directory, or .git), counted in files."`
	SizeBytes    int64  `json:"size_bytes" jsonschema_description:"The size now; for a deleted path, the size it had; for a directory entry, its files' total."`
	OldSizeBytes int64  `json:"old_size_bytes,omitempty" jsonschema_description:"For a modified path, the size the host copy has."`
	Files        int    `json:"files,omitempty" jsonschema_description:"For a directory entry, how many paths it stands for (a lower bound when counting stopped)."`
	LeftOut      string `json:"left_out,omitempty" jsonschema_description:"Why the exported patch and workspace_diff leave this change out (under .git, a file too large to read, or new and ignored by the folder's .gitignore); absent when the patch holds it."`
}

// WorkspaceChangesParams are workspace_changes' arguments.
type WorkspaceChangesParams struct {
	Path string `json:"path,omitempty" jsonschema:"maxLength=1295" jsonschema_description:"Only changes at or under this path, relative to /workspace; empty for all."`
}

// Validate normalises the path.
func (p *WorkspaceChangesParams) Validate() (err error) {
	p.Path, err = cleanPath("path", p.Path, true)
	return err
}

// WorkspaceChangesResult is workspace_changes' result.
type WorkspaceChangesResult struct {
	Mounts    []MountView  `json:"mounts" jsonschema_description:"The host folders in the workspace."`
	Changes   []ChangeView `json:"changes" jsonschema_description:"Files and symlinks created, modified or deleted in the host folders, in path order within each folder; then one directory entry per group of paths the patch leaves out."`
	Total     int          `json:"total" jsonschema_description:"How many entries changes has in all, a directory entry counting once."`
	Truncated bool         `json:"truncated" jsonschema_description:"True when only the first 2000 changes are listed; narrow with path."`
}

// Links names the changed paths listed.
func (r WorkspaceChangesResult) Links() []Link {
	links := make([]Link, 0, len(r.Changes))
	for _, c := range r.Changes {
		if c.Kind != string(changes.KindDir) {
			links = append(links, Link{c.Path, c.Status})
		}
	}
	return links
}

// Text renders one change a line.
func (r WorkspaceChangesResult) Text() string {
	var b strings.Builder
	if len(r.Mounts) == 0 {
		return "no host folder is mounted in this workspace (or none has been used yet), so there are no changes to report"
	}
	fmt.Fprintf(&b, "%d changed paths in the mounted host folders", r.Total)
	if r.Truncated {
		fmt.Fprintf(&b, " (first %d shown; narrow with path)", len(r.Changes))
	}
	for _, c := range r.Changes {
		fmt.Fprintf(&b, "\n%-8s %-7s %10d  %s", c.Status, c.Kind, c.SizeBytes, display.Text(c.Path))
		if c.Kind == string(changes.KindDir) {
			fmt.Fprintf(&b, " (%d paths)", c.Files)
		}
		if c.LeftOut != "" {
			fmt.Fprintf(&b, "  (not in the patch: %s)", c.LeftOut)
		}
	}
	return b.String()
}

// FolderChanges is what workspace_changes and workspace_diff take of a
// session's workspace: what it changed in its mounted host folders, whose
// host copies themselves never change.
type FolderChanges interface {
	// Mounts describes the host folders in the session's workspace.
	Mounts() []workspace.MountInfo
	// Changes lists the changes under prefix ("" for all).
	Changes(ctx context.Context, prefix string) ([]workspace.FolderChange, error)
	// Diff is Changes as a unified diff, binary files listed, not shown.
	Diff(ctx context.Context, prefix string) (workspace.DiffResult, error)
}

// WorkspaceChanges returns the workspace_changes tool.
func WorkspaceChanges(workspaceFor WorkspaceFor) (server.ServerTool, error) {
	return build(workspaceFor, definition[FolderChanges, WorkspaceChangesParams, WorkspaceChangesResult]{
		name:  "workspace_changes",
		title: "List changes to the mounted host folders",
		description: "List the files and symlinks created, modified or deleted in the host folders mounted in /workspace " +
			"(the workspace prompt lists them), with their sizes. The host copies never change: this is what the user " +
			"would take back as a patch. Paths the patch leaves out in bulk (a new directory the folder's .gitignore " +
			"ignores, such as node_modules, or .git) come last, one counted entry per directory. Read-only and cheap; " +
			"starts no container. At most 2000 changes; narrow with path. workspace_diff shows the changes themselves.",
		annotations: annotate(true, false, true),
		handle: func(ctx context.Context, ws FolderChanges, p WorkspaceChangesParams) (WorkspaceChangesResult, error) {
			list, err := ws.Changes(ctx, p.Path)
			r := WorkspaceChangesResult{Mounts: mountViews(ws.Mounts()), Changes: []ChangeView{}, Total: len(list)}
			for _, c := range list {
				if len(r.Changes) == maxChangesListed {
					r.Truncated = true
					break
				}
				r.Changes = append(r.Changes, ChangeView{Path: c.Path, Status: string(c.Status), Kind: string(c.Kind), SizeBytes: c.Size, OldSizeBytes: c.OldSize, Files: c.Files, LeftOut: c.LeftOut})
			}
			return r, err
		},
	})
}

// WorkspaceDiffParams are workspace_diff's arguments.
type WorkspaceDiffParams struct {
	Path   string `json:"path,omitempty" jsonschema:"maxLength=1295" jsonschema_description:"Only changes at or under this path, relative to /workspace; empty for all."`
	Offset int    `json:"offset,omitempty" jsonschema:"minimum=0,default=0" jsonschema_description:"First line of the diff to return, 0-based."`
	Limit  int    `json:"limit,omitempty" jsonschema:"minimum=1,maximum=2000,default=2000" jsonschema_description:"How many lines to return, 1 to 2000."`
}

// Validate normalises the path.
func (p *WorkspaceDiffParams) Validate() (err error) {
	p.Path, err = cleanPath("path", p.Path, true)
	return err
}

// WorkspaceDiffResult is workspace_diff's result.
type WorkspaceDiffResult struct {
	Diff       string `json:"diff" jsonschema_description:"The lines of the unified diff (git's format, paths relative to /workspace); a line over 2000 characters is cut with a marker."`
	Offset     int    `json:"offset" jsonschema_description:"The 0-based index of the first line returned."`
	Limit      int    `json:"limit" jsonschema_description:"How many lines were returned."`
	TotalLines int    `json:"total_lines" jsonschema_description:"How many lines the diff has."`
	Truncated  bool   `json:"truncated" jsonschema_description:"True when lines remain after these, a line was cut, or the diff passed 16 MiB and stops there."`
	Capped     bool   `json:"capped" jsonschema_description:"True when the whole diff passed 16 MiB and stops there; narrow it with path."`
}

// Links names the files this page of the diff shows.
func (r WorkspaceDiffResult) Links() []Link {
	var links []Link
	for _, p := range diffPaths(r.Diff) {
		links = append(links, Link{p, "changed"})
	}
	return links
}

// Text is the diff under a header saying which lines it holds.
func (r WorkspaceDiffResult) Text() string {
	if r.TotalLines == 0 {
		return "no changes to the mounted host folders"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "lines %d-%d of %d of the diff", r.Offset+1, r.Offset+r.Limit, r.TotalLines)
	if next := r.Offset + r.Limit; next < r.TotalLines {
		fmt.Fprintf(&b, " (read more with offset %d)", next)
	}
	if r.Capped {
		fmt.Fprintf(&b, " (the diff passed %d MiB and stops there; narrow it with path)", workspace.MaxDiffBytes>>20)
	}
	b.WriteString("\n")
	b.WriteString(r.Diff)
	return b.String()
}

// WorkspaceDiff returns the workspace_diff tool.
func WorkspaceDiff(workspaceFor WorkspaceFor) (server.ServerTool, error) {
	return build(workspaceFor, definition[FolderChanges, WorkspaceDiffParams, WorkspaceDiffResult]{
		name:  "workspace_diff",
		title: "Show changes to the mounted host folders as a diff",
		description: "Show the changes to the host folders mounted in /workspace as a unified diff in git's format, paths " +
			"relative to /workspace: `limit` lines (1-2000, default 2000) from the 0-based line `offset`; read on with a " +
			"larger offset. Binary files, files that are not UTF-8 and files over 1 MiB are listed (\"Binary files ... " +
			"differ\"), not shown. What the patch leaves out is named after every change, one \"# not in this patch\" " +
			"line per path or per ignored directory. A line over 2000 characters is cut with a marker; a diff over 16 MiB " +
			"stops there (narrow it with path). Read-only; starts no container.",
		annotations: annotate(true, false, true),
		handle: func(ctx context.Context, ws FolderChanges, p WorkspaceDiffParams) (WorkspaceDiffResult, error) {
			d, err := ws.Diff(ctx, p.Path)
			if err != nil {
				return WorkspaceDiffResult{}, err
			}
			return pageOfDiff(d, p.Offset, p.Limit), nil
		},
	})
}

// pageOfDiff cuts limit lines (0: workspace.MaxReadLines) from offset out
// of a diff.
func pageOfDiff(d workspace.DiffResult, offset, limit int) WorkspaceDiffResult {
	if limit == 0 {
		limit = workspace.MaxReadLines
	}
	lines := strings.SplitAfter(d.Text, "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	r := WorkspaceDiffResult{Offset: offset, TotalLines: len(lines), Capped: d.Truncated}
	start := min(offset, len(lines))
	end := min(start+limit, len(lines))
	var b strings.Builder
	cut := false
	for _, line := range lines[start:end] {
		body, wasCut := wire.CutLine(strings.TrimSuffix(line, "\n"))
		cut = cut || wasCut
		b.WriteString(body)
		if strings.HasSuffix(line, "\n") {
			b.WriteString("\n")
		}
	}
	r.Diff, r.Limit = b.String(), end-start
	r.Truncated = end < len(lines) || cut || d.Truncated
	return r
}
