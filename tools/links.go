package tools

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/wspath"
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

// addLinks appends r's links to res's content. A path the files resource
// would refuse (a shell can make names the path rules do not allow) gets
// no link: every link given opens.
func addLinks(res *mcp.CallToolResult, r any) {
	l, ok := r.(Linker)
	if !ok {
		return
	}
	n := 0
	for _, link := range l.Links() {
		if !wspath.IsClean(link.Path) {
			continue
		}
		if n == maxLinks {
			break
		}
		n++
		res.Content = append(res.Content, mcp.NewResourceLink(FileLink(link.Path), link.Path, link.Description, ""))
	}
}

// diffPaths are the files a page of the diff names, in order, each once,
// read from its "diff --git a/P b/P" lines (quoted as git quotes unusual
// names). Only those lines are read: a ---/+++ line can be a hunk's
// content, and no content line starts with "diff --git ".
func diffPaths(diff string) []string {
	var out []string
	seen := map[string]bool{}
	for _, line := range strings.Split(diff, "\n") {
		path, ok := strings.CutPrefix(line, "diff --git ")
		if !ok {
			continue
		}
		if path, ok = headerPath(path); ok && !seen[path] {
			seen[path] = true
			out = append(out, path)
		}
	}
	return out
}

// headerPath is P in "a/P b/P", either name quoted as git quotes it; ok is
// false for anything else, such as a header cut for its length.
func headerPath(names string) (string, bool) {
	var a, b string
	if strings.HasPrefix(names, `"`) {
		quoted, err := strconv.QuotedPrefix(names)
		if err != nil || !strings.HasPrefix(names[len(quoted):], " ") {
			return "", false
		}
		a, _ = strconv.Unquote(quoted)
		b = names[len(quoted)+1:]
		if u, err := strconv.Unquote(b); err == nil {
			b = u
		}
	} else {
		// Unquoted, both names are the same length: the space between
		// them is the middle byte.
		if len(names)%2 == 0 {
			return "", false
		}
		a, b = names[:len(names)/2], names[len(names)/2+1:]
	}
	path, okA := strings.CutPrefix(a, "a/")
	other, okB := strings.CutPrefix(b, "b/")
	if !okA || !okB || path != other || path == "" {
		return "", false
	}
	return path, true
}
