package tools

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/display"
	"github.com/wink-mcp/wink-mcp/glob"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// GlobParams are glob's arguments.
type GlobParams struct {
	Pattern string `json:"pattern" jsonschema:"minLength=1,maxLength=1024" jsonschema_description:"Pattern relative to path: * and ? within a name, [abc] or [!abc] classes, ** for any number of directories (e.g. **/*.go). No braces."`
	Path    string `json:"path,omitempty" jsonschema:"maxLength=1295" jsonschema_description:"Directory to search, relative to /workspace; empty for /workspace itself."`
}

// Validate checks the pattern and normalises the path.
func (p *GlobParams) Validate() (err error) {
	if _, err := glob.Compile(p.Pattern); err != nil {
		return fmt.Errorf("pattern: %w", err)
	}
	p.Path, err = cleanPath("path", p.Path, true)
	return err
}

// GlobResult is glob's result.
type GlobResult struct {
	Matches   []workspace.GlobMatch `json:"matches" jsonschema_description:"Matching files, sorted by path, each with path (relative to /workspace) and size_bytes."`
	Truncated bool                  `json:"truncated" jsonschema_description:"True when only the first 2000 matches are listed, or the search stopped early."`
	Note      string                `json:"note,omitempty" jsonschema_description:"Why the result is truncated, and what to do."`
}

// Text lists the matches.
func (r GlobResult) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d files match", len(r.Matches))
	if r.Note != "" {
		fmt.Fprintf(&b, " (%s)", r.Note)
	}
	for _, m := range r.Matches {
		fmt.Fprintf(&b, "\n%s (%d bytes)", display.Text(m.Path), m.SizeBytes)
	}
	return b.String()
}

// FileSearcher is what glob and grep take of a session's workspace.
type FileSearcher interface {
	// Glob finds files whose paths under path match pattern.
	Glob(ctx context.Context, pattern, path string) (workspace.GlobResult, error)
	// Grep finds lines matching an RE2 pattern.
	Grep(ctx context.Context, req workspace.GrepRequest) (workspace.GrepResult, error)
}

// Glob returns the glob tool.
func Glob(workspaceFor WorkspaceFor) (server.ServerTool, error) {
	return build(workspaceFor, definition[FileSearcher, GlobParams, GlobResult]{
		name:  "glob",
		title: "Find files by pattern in the workspace",
		description: "Find files under /workspace (or under path) whose paths match a glob pattern: * and ? within one name, " +
			"[abc] classes, and ** for any number of directories, as in **/*_test.go. Returns paths and sizes, sorted, at " +
			"most 2000; truncated says when there are more. Symbolic links are not followed, so link loops are harmless.",
		annotations: annotate(true, false, true),
		handle: func(ctx context.Context, ws FileSearcher, p GlobParams) (GlobResult, error) {
			r, err := ws.Glob(ctx, p.Pattern, p.Path)
			return GlobResult{Matches: r.Matches, Truncated: r.Truncated, Note: r.Note}, err
		},
	})
}

// GrepParams are grep's arguments.
type GrepParams struct {
	Pattern string `json:"pattern" jsonschema:"minLength=1,maxLength=4096" jsonschema_description:"RE2 regular expression, matched against each line; (?i) makes it case-insensitive. No backreferences or lookaround."`
	Path    string `json:"path,omitempty" jsonschema:"maxLength=1295" jsonschema_description:"File or directory to search, relative to /workspace; empty for /workspace itself."`
	Glob    string `json:"glob,omitempty" jsonschema:"maxLength=1024" jsonschema_description:"Only search files whose names match this glob (e.g. *.py); a glob with / is matched against the path under path."`
}

// Validate compiles the pattern and the glob and normalises the path.
func (p *GrepParams) Validate() (err error) {
	if _, err := regexp.Compile(p.Pattern); err != nil {
		return fmt.Errorf("pattern: not a valid RE2 regular expression: %w", err)
	}
	if p.Glob != "" {
		if _, err := glob.Compile(p.Glob); err != nil {
			return fmt.Errorf("glob: %w", err)
		}
	}
	p.Path, err = cleanPath("path", p.Path, true)
	return err
}

// GrepResult is grep's result.
type GrepResult struct {
	Matches       []workspace.GrepMatch `json:"matches" jsonschema_description:"Matching lines, sorted by path and line: path, line_number (from 1) and line (cut at 500 characters)."`
	Truncated     bool                  `json:"truncated" jsonschema_description:"True when only the first 2000 matches are listed, or the search stopped early."`
	FilesSearched int                   `json:"files_searched" jsonschema_description:"Text files searched."`
	FilesSkipped  int                   `json:"files_skipped" jsonschema_description:"Files skipped as binary or larger than 16 MiB."`
	Note          string                `json:"note,omitempty" jsonschema_description:"Why the result is truncated, and what to do."`
}

// Text lists the matches as path:line: text.
func (r GrepResult) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d matches in %d files searched", len(r.Matches), r.FilesSearched)
	if r.FilesSkipped > 0 {
		fmt.Fprintf(&b, " (%d binary or large files skipped)", r.FilesSkipped)
	}
	if r.Note != "" {
		fmt.Fprintf(&b, "; %s", r.Note)
	}
	for _, m := range r.Matches {
		fmt.Fprintf(&b, "\n%s:%d: %s", display.Text(m.Path), m.LineNumber, m.Line) // the line is the file's content, as read_file shows it
	}
	return b.String()
}

// Grep returns the grep tool.
func Grep(workspaceFor WorkspaceFor) (server.ServerTool, error) {
	return build(workspaceFor, definition[FileSearcher, GrepParams, GrepResult]{
		name:  "grep",
		title: "Search file contents in the workspace",
		description: "Search the text files under /workspace (or under path, or only files whose names match glob) for lines " +
			"matching an RE2 regular expression, which runs in linear time, so no pattern can hang. Returns path, line number " +
			"and line (cut at 500 characters), at most 2000 matches; truncated says when there are more. Binary files and " +
			"files over 16 MiB are skipped and counted. An invalid pattern is an error quoting the parse error.",
		annotations: annotate(true, false, true),
		handle: func(ctx context.Context, ws FileSearcher, p GrepParams) (GrepResult, error) {
			r, err := ws.Grep(ctx, workspace.GrepRequest{Pattern: p.Pattern, Path: p.Path, Glob: p.Glob})
			return GrepResult{Matches: r.Matches, Truncated: r.Truncated, FilesSearched: r.FilesSearched, FilesSkipped: r.FilesSkipped, Note: r.Note}, err
		},
	})
}
