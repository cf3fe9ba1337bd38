package tools

import (
	"context"
	"encoding/base64"
	"fmt"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/workspace"
	"github.com/wink-mcp/wink-mcp/wspath"
)

// WriteFileParams are write_file's arguments.
type WriteFileParams struct {
	FilePath string `json:"file_path" jsonschema:"maxLength=1295" jsonschema_description:"File relative to /workspace; missing parent directories are created."`
	Content  string `json:"content" jsonschema:"maxLength=2796204" jsonschema_description:"The whole new content: UTF-8 text of at most 48000 characters, or with encoding base64 the file's bytes as base64, at most 2 MiB of bytes."`
	Encoding string `json:"encoding,omitempty" jsonschema:"enum=text,enum=base64,default=text" jsonschema_description:"text, or base64 to write exact bytes (a binary file)."`

	data []byte // the decoded content of a base64 write
}

// Validate normalises the path, checks the text limit and decodes base64.
func (p *WriteFileParams) Validate() (err error) {
	if p.FilePath, err = cleanPath("file_path", p.FilePath, false); err != nil {
		return err
	}
	if p.Encoding != "base64" {
		if n := utf8.RuneCountInString(p.Content); n > workspace.MaxFileChars {
			return fmt.Errorf("content: is %d characters; the limit is %d (write larger files in parts with podman_shell, or as base64 up to 2 MiB)", n, workspace.MaxFileChars)
		}
		return nil
	}
	if p.data, err = base64.StdEncoding.DecodeString(p.Content); err != nil {
		return fmt.Errorf("content: is not standard base64 (RFC 4648, with padding): %v", err)
	}
	if len(p.data) > workspace.MaxBinaryBytes {
		return fmt.Errorf("content: decodes to %d bytes; the limit of a base64 write is %d", len(p.data), workspace.MaxBinaryBytes)
	}
	return nil
}

// WriteFileResult is write_file's result.
type WriteFileResult struct {
	Path      string `json:"path" jsonschema_description:"The file written, relative to /workspace."`
	SizeBytes int64  `json:"size_bytes" jsonschema_description:"Its size in bytes."`
	Version   int    `json:"version" jsonschema_description:"How many times this session has written or edited it: its tools, and its commands as the workspace watch saw them."`
	Created   bool   `json:"created" jsonschema_description:"True when the file did not exist before."`
}

// Links names the file written.
func (r WriteFileResult) Links() []Link { return []Link{{r.Path, "written"}} }

// Text says what was written.
func (r WriteFileResult) Text() string {
	verb := "replaced"
	if r.Created {
		verb = "created"
	}
	return fmt.Sprintf("%s %s (%d bytes, version %d)", verb, r.Path, r.SizeBytes, r.Version)
}

// FileWriter is what write_file, edit_file and rm take of a session's
// workspace. Paths are normalised by wspath.Clean.
type FileWriter interface {
	// WriteFile creates or atomically replaces a file, creating its parents.
	WriteFile(ctx context.Context, path, content string) (workspace.FileWrite, error)
	// WriteBytes is WriteFile for any bytes, at most wire.MaxBinaryBytes.
	WriteBytes(ctx context.Context, path string, data []byte) (workspace.FileWrite, error)
	// EditFile replaces text in a file, atomically.
	EditFile(ctx context.Context, req workspace.EditRequest) (workspace.FileEdit, error)
	// Remove deletes a file, a symlink (not its target) or a directory tree.
	Remove(ctx context.Context, path string) (workspace.RemoveResult, error)
}

// WriteFile returns the write_file tool.
func WriteFile(workspaceFor WorkspaceFor) (server.ServerTool, error) {
	return build(workspaceFor, definition[FileWriter, WriteFileParams, WriteFileResult]{
		name:  "write_file",
		title: "Write a file in the workspace",
		description: "Create a file under /workspace, or replace its whole content, creating missing parent directories. The " +
			"content is UTF-8 text of at most 48000 characters, or with encoding=base64 any bytes (at most 2 MiB) as base64. The write is atomic (a temporary file, then a rename): a " +
			"rejected or failed write leaves the old file as it was. A replaced file keeps its permissions. Directories, " +
			"symlinks and special files are not overwritten. To change part of a file, use edit_file.",
		annotations: annotate(false, true, true),
		handle: func(ctx context.Context, ws FileWriter, p WriteFileParams) (WriteFileResult, error) {
			write := func() (workspace.FileWrite, error) { return ws.WriteFile(ctx, p.FilePath, p.Content) }
			if p.Encoding == "base64" {
				write = func() (workspace.FileWrite, error) { return ws.WriteBytes(ctx, p.FilePath, p.data) }
			}
			r, err := write()
			return WriteFileResult{Path: r.Path, SizeBytes: r.SizeBytes, Version: r.Version, Created: r.Created}, err
		},
	})
}

// EditFileParams are edit_file's arguments.
type EditFileParams struct {
	FilePath   string `json:"file_path" jsonschema:"maxLength=1295" jsonschema_description:"File relative to /workspace."`
	OldString  string `json:"old_string" jsonschema:"minLength=1,maxLength=48000" jsonschema_description:"Exact text to replace, whitespace and indentation included. It must occur exactly once unless replace_all is true."`
	NewString  string `json:"new_string" jsonschema:"maxLength=48000" jsonschema_description:"Text to put in its place (empty deletes it)."`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"default=false" jsonschema_description:"Replace every occurrence instead of requiring exactly one."`
}

// Validate normalises the path.
func (p *EditFileParams) Validate() (err error) {
	p.FilePath, err = cleanPath("file_path", p.FilePath, false)
	return err
}

// EditFileResult is edit_file's result.
type EditFileResult struct {
	Path         string `json:"path" jsonschema_description:"The file edited, relative to /workspace."`
	Replacements int    `json:"replacements" jsonschema_description:"How many occurrences were replaced."`
	SizeBytes    int64  `json:"size_bytes" jsonschema_description:"The file's new size in bytes."`
	Version      int    `json:"version" jsonschema_description:"How many times this session has written or edited it: its tools, and its commands as the workspace watch saw them."`
}

// Links names the file edited.
func (r EditFileResult) Links() []Link { return []Link{{r.Path, "edited"}} }

// Text says what changed.
func (r EditFileResult) Text() string {
	return fmt.Sprintf("replaced %d occurrence(s) in %s (now %d bytes, version %d)", r.Replacements, r.Path, r.SizeBytes, r.Version)
}

// EditFile returns the edit_file tool.
func EditFile(workspaceFor WorkspaceFor) (server.ServerTool, error) {
	return build(workspaceFor, definition[FileWriter, EditFileParams, EditFileResult]{
		name:  "edit_file",
		title: "Edit a file in the workspace",
		description: "Replace old_string with new_string in a UTF-8 text file under /workspace. old_string must occur exactly " +
			"once, or set replace_all; when it is not found, or found several times, the error says how many times and at " +
			"which lines, and nothing changes. In a file with CRLF line endings, old_string and new_string written with LF " +
			"still match and the file keeps CRLF. The edited file may not exceed 48000 characters. Atomic, like write_file.",
		annotations: annotate(false, true, false),
		handle: func(ctx context.Context, ws FileWriter, p EditFileParams) (EditFileResult, error) {
			r, err := ws.EditFile(ctx, workspace.EditRequest{Path: p.FilePath, Old: p.OldString, New: p.NewString, ReplaceAll: p.ReplaceAll})
			return EditFileResult{Path: r.Path, Replacements: r.Replacements, SizeBytes: r.SizeBytes, Version: r.Version}, err
		},
	})
}

// RmParams are rm's arguments.
type RmParams struct {
	Path string `json:"path" jsonschema:"maxLength=1295" jsonschema_description:"File, symlink or directory relative to /workspace; not the workspace root."`
}

// Validate normalises the path and refuses the root.
func (p *RmParams) Validate() error {
	c, err := wspath.Clean(p.Path)
	if err != nil {
		return fmt.Errorf("path: %w", err)
	}
	if c == "" {
		return fmt.Errorf("path: refusing to remove the workspace root; remove the entries inside it instead")
	}
	p.Path = c
	return nil
}

// RmResult is rm's result.
type RmResult struct {
	Path           string `json:"path" jsonschema_description:"What was removed, relative to /workspace."`
	RemovedEntries int    `json:"removed_entries" jsonschema_description:"How many files, links and directories were removed, the path itself included."`
}

// Links names what was removed (reading it again says it is gone).
func (r RmResult) Links() []Link { return []Link{{r.Path, "removed"}} }

// Text says what was removed.
func (r RmResult) Text() string {
	return fmt.Sprintf("removed %s (%d entries)", r.Path, r.RemovedEntries)
}

// Rm returns the rm tool.
func Rm(workspaceFor WorkspaceFor) (server.ServerTool, error) {
	return build(workspaceFor, definition[FileWriter, RmParams, RmResult]{
		name:  "rm",
		title: "Remove a file or directory in the workspace",
		description: "Remove a file, a symbolic link (never its target) or a whole directory tree under /workspace, and say how " +
			"many entries went. The workspace root itself cannot be removed.",
		annotations: annotate(false, true, false),
		handle: func(ctx context.Context, ws FileWriter, p RmParams) (RmResult, error) {
			r, err := ws.Remove(ctx, p.Path)
			return RmResult{Path: r.Path, RemovedEntries: r.RemovedEntries}, err
		},
	})
}
