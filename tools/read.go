package tools

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/display"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// LsParams are ls's arguments.
type LsParams struct {
	Path string `json:"path,omitempty" jsonschema:"maxLength=1295" jsonschema_description:"Directory (or file) relative to /workspace; empty or \".\" for /workspace itself."`
}

// Validate normalises the path.
func (p *LsParams) Validate() (err error) {
	p.Path, err = cleanPath("path", p.Path, true)
	return err
}

// LsResult is ls's result.
type LsResult struct {
	Path      string            `json:"path" jsonschema_description:"The directory listed, relative to /workspace (\"\" for the root)."`
	Entries   []workspace.Entry `json:"entries" jsonschema_description:"Entries, directories first, then by name: name, path, kind (file, directory, symlink or other), size_bytes, modified, and link_target for symlinks."`
	Total     int               `json:"total" jsonschema_description:"How many entries the directory holds."`
	Truncated bool              `json:"truncated" jsonschema_description:"True when only the first 2000 entries are listed."`
}

// Text renders the listing, one entry a line.
func (r LsResult) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d entries in %s", r.Total, shown(r.Path))
	if r.Truncated {
		fmt.Fprintf(&b, " (first %d shown)", len(r.Entries))
	}
	for _, e := range r.Entries {
		name := display.Text(e.Name)
		switch e.Kind {
		case workspace.KindDirectory:
			name += "/"
		case workspace.KindSymlink:
			name += " -> " + display.Text(e.LinkTarget)
		case workspace.KindOther:
			name += " (special file)"
		}
		fmt.Fprintf(&b, "\n%10d  %s  %s", e.SizeBytes, e.Modified.Format("2006-01-02 15:04"), name)
	}
	return b.String()
}

// FileReader is what ls and read_file take of a session's workspace. Paths
// are normalised by wspath.Clean ("" is the workspace root).
type FileReader interface {
	// List describes a directory's entries, or one file.
	List(ctx context.Context, path string) (workspace.ListResult, error)
	// ReadFile returns up to limit lines of a UTF-8 file from line offset (0-based).
	ReadFile(ctx context.Context, path string, offset, limit int) (workspace.ReadResult, error)
	// ReadBytes returns up to limit bytes of any file from offset.
	ReadBytes(ctx context.Context, path string, offset int64, limit int) (workspace.BytesRead, error)
}

// Ls returns the ls tool.
func Ls(workspaceFor WorkspaceFor) (server.ServerTool, error) {
	return build(workspaceFor, definition[FileReader, LsParams, LsResult]{
		name:  "ls",
		title: "List a directory in the workspace",
		description: "List the entries of a directory under /workspace (or describe one file): name, path, kind (file, directory, " +
			"symlink, other), size and modification time, directories first. Symbolic links are shown as links with their " +
			"target, never followed out of /workspace. At most 2000 entries; truncated says when there are more. Paths are " +
			"relative to /workspace, ASCII, at most 16 segments of 80 characters.",
		annotations: annotate(true, false, true),
		handle: func(ctx context.Context, ws FileReader, p LsParams) (LsResult, error) {
			r, err := ws.List(ctx, p.Path)
			return LsResult{Path: r.Path, Entries: r.Entries, Total: r.Total, Truncated: r.Truncated}, err
		},
	})
}

// ReadFileParams are read_file's arguments.
type ReadFileParams struct {
	FilePath string `json:"file_path" jsonschema:"maxLength=1295" jsonschema_description:"File relative to /workspace."`
	Offset   int    `json:"offset,omitempty" jsonschema:"minimum=0,default=0" jsonschema_description:"First line to return, 0-based."`
	Limit    int    `json:"limit,omitempty" jsonschema:"minimum=1,maximum=2000,default=2000" jsonschema_description:"How many lines to return, 1 to 2000."`
	Encoding string `json:"encoding,omitempty" jsonschema:"enum=text,enum=base64,default=text" jsonschema_description:"text reads lines of a UTF-8 file; base64 reads the exact bytes of any file, byte_limit bytes from byte_offset, as base64 in content."`
	// ByteOffset and ByteLimit page a base64 read.
	ByteOffset int64 `json:"byte_offset,omitempty" jsonschema:"minimum=0" jsonschema_description:"base64 only: the first byte to read, 0-based."`
	ByteLimit  int   `json:"byte_limit,omitempty" jsonschema:"minimum=1,maximum=2097152,default=1048576" jsonschema_description:"base64 only: how many bytes to read, at most 2 MiB (default 1 MiB)."`
}

// Validate normalises the path and keeps line and byte arguments apart.
func (p *ReadFileParams) Validate() (err error) {
	if p.FilePath, err = cleanPath("file_path", p.FilePath, false); err != nil {
		return err
	}
	switch {
	case p.Encoding == "base64" && (p.Offset != 0 || p.Limit != 0):
		return fmt.Errorf("offset and limit: count lines, for encoding text; a base64 read takes byte_offset and byte_limit")
	case p.Encoding != "base64" && (p.ByteOffset != 0 || p.ByteLimit != 0):
		return fmt.Errorf("byte_offset and byte_limit: only with encoding base64 (a text read takes offset and limit, in lines)")
	}
	return nil
}

// ReadFileResult is read_file's result.
type ReadFileResult struct {
	Path       string `json:"path" jsonschema_description:"The file read, relative to /workspace."`
	Content    string `json:"content" jsonschema_description:"The lines read, with their line endings; a line over 2000 characters is cut with a marker."`
	Offset     int    `json:"offset" jsonschema_description:"The 0-based index of the first line returned."`
	Limit      int    `json:"limit" jsonschema_description:"How many lines were returned."`
	TotalLines int    `json:"total_lines" jsonschema_description:"How many lines the file has."`
	Truncated  bool   `json:"truncated" jsonschema_description:"True when lines remain after these, or a line was cut."`
	Encoding   string `json:"encoding" jsonschema_description:"text, or base64 when content holds the file's bytes as base64."`
	SizeBytes  int64  `json:"size_bytes,omitempty" jsonschema_description:"base64: the file's size in bytes."`
	ByteOffset int64  `json:"byte_offset,omitempty" jsonschema_description:"base64: the first byte read."`
	NextByte   int64  `json:"next_byte_offset,omitempty" jsonschema_description:"base64: the byte_offset that reads on; equal to size_bytes at the end."`
}

// Text renders the lines numbered from 1, under a header saying which part of the file they are.
func (r ReadFileResult) Text() string {
	var b strings.Builder
	if r.Encoding == "base64" {
		fmt.Fprintf(&b, "bytes %d-%d of %d in %s, as base64", r.ByteOffset, r.NextByte, r.SizeBytes, r.Path)
		if r.NextByte < r.SizeBytes {
			fmt.Fprintf(&b, " (read more with byte_offset %d)", r.NextByte)
		}
		return b.String() + "\n" + r.Content
	}
	switch {
	case r.TotalLines == 0:
		fmt.Fprintf(&b, "%s is empty", r.Path)
	default:
		fmt.Fprintf(&b, "lines %d-%d of %d in %s", r.Offset+1, r.Offset+r.Limit, r.TotalLines, r.Path)
		if next := r.Offset + r.Limit; next < r.TotalLines {
			fmt.Fprintf(&b, " (read more with offset %d)", next)
		}
	}
	for i, line := range strings.SplitAfter(r.Content, "\n") {
		if line == "" {
			continue
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		fmt.Fprintf(&b, "\n%6d\t%s", r.Offset+i+1, line)
	}
	return b.String()
}

// ReadFile returns the read_file tool.
func ReadFile(workspaceFor WorkspaceFor) (server.ServerTool, error) {
	return build(workspaceFor, definition[FileReader, ReadFileParams, ReadFileResult]{
		name:  "read_file",
		title: "Read a text file in the workspace",
		description: "Read lines of a UTF-8 text file under /workspace: `limit` lines (1-2000, default 2000) from the 0-based line " +
			"`offset`. The text shows the lines numbered from 1 under a header such as \"lines 1-2000 of 5312\"; read on with a " +
			"larger offset. A line longer than 2000 characters is cut with a marker. Binary files (not valid UTF-8) are " +
			"refused with their size as text: read their exact bytes with encoding=base64 (byte_offset, byte_limit up to 2 MiB). Directories, special files and symlinks " +
			"leading out of /workspace are refused. Files over 16 MiB are refused: use podman_shell (head, tail, sed -n).",
		annotations: annotate(true, false, true),
		handle: func(ctx context.Context, ws FileReader, p ReadFileParams) (ReadFileResult, error) {
			if p.Encoding == "base64" {
				return readBytes(ctx, ws, p)
			}
			limit := p.Limit
			if limit == 0 {
				limit = workspace.MaxReadLines
			}
			r, err := ws.ReadFile(ctx, p.FilePath, p.Offset, limit)
			return ReadFileResult{Path: r.Path, Content: r.Content, Offset: r.Offset, Limit: r.Limit, TotalLines: r.TotalLines, Truncated: r.Truncated, Encoding: "text"}, err
		},
	})
}

// readBytes is read_file with encoding base64.
func readBytes(ctx context.Context, ws FileReader, p ReadFileParams) (ReadFileResult, error) {
	limit := p.ByteLimit
	if limit == 0 {
		limit = DefaultByteLimit
	}
	r, err := ws.ReadBytes(ctx, p.FilePath, p.ByteOffset, limit)
	if err != nil {
		return ReadFileResult{}, err
	}
	next := r.Offset + int64(len(r.Data))
	return ReadFileResult{Path: r.Path, Content: base64.StdEncoding.EncodeToString(r.Data), Encoding: "base64", SizeBytes: r.SizeBytes,
		ByteOffset: r.Offset, NextByte: next, Truncated: next < r.SizeBytes}, nil
}

// DefaultByteLimit is how many bytes a base64 read returns by default.
const DefaultByteLimit = 1 << 20
