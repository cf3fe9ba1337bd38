package tools

import (
	"net/url"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// FilesURIPrefix starts the resource URI of a workspace file; the server
// serves them through its files resource template.
const FilesURIPrefix = "wink://workspace/files/"

// maxLinks bounds the resource links one result carries.
const maxLinks = 100

// FileLink is the resource URI of the workspace file at path (relative to
// /workspace), each segment escaped so that any name is a valid URI.
func FileLink(path string) string {
	segments := strings.Split(path, "/")
	for i, s := range segments {
		segments[i] = url.PathEscape(s)
	}
	return FilesURIPrefix + strings.Join(segments, "/")
}

// Link names a workspace file a result is about.
type Link struct {
	// Path is relative to /workspace.
	Path string
	// Description says what the call did to it.
	Description string
}

// Linker is implemented by results that name workspace files: each becomes
// a resource_link content item after the text, so that a client can open
// it (at most maxLinks).
type Linker interface {
	Links() []Link
}

// addLinks appends r's links to res's content.
func addLinks(res *mcp.CallToolResult, r any) {
	l, ok := r.(Linker)
	if !ok {
		return
	}
	for i, link := range l.Links() {
		if i == maxLinks {
			break
		}
		res.Content = append(res.Content, mcp.NewResourceLink(FileLink(link.Path), link.Path, link.Description, ""))
	}
}

// diffPaths are the files a page of a git diff names, in order, each once:
// the new path of each file, or the old one of a deleted file. Quoted
// names (git's for unusual bytes) are left out.
func diffPaths(diff string) []string {
	var out []string
	seen := map[string]bool{}
	var old string
	for _, line := range strings.Split(diff, "\n") {
		var path string
		switch {
		case strings.HasPrefix(line, "--- a/"):
			old = strings.TrimPrefix(line, "--- a/")
			continue
		case strings.HasPrefix(line, "+++ b/"):
			path = strings.TrimPrefix(line, "+++ b/")
		case line == "+++ /dev/null":
			path = old
		default:
			continue
		}
		if path != "" && !seen[path] {
			seen[path] = true
			out = append(out, path)
		}
	}
	return out
}
