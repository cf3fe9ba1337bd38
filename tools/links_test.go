package tools

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/workspace"
)

func TestFileLinkEscapesEveryName(t *testing.T) {
	for _, path := range []string{"a.txt", "dir/sub/file.go", "100% done#1?.txt", "spaces in/name", "ünï/cödé"} {
		link := FileLink(path)
		u, err := url.Parse(link)
		if err != nil || u.Scheme != "wink" {
			t.Errorf("%q: link %q does not parse: %v", path, link, err)
			continue
		}
		back, err := url.PathUnescape(strings.TrimPrefix(link, FilesURIPrefix))
		if err != nil || back != path {
			t.Errorf("%q: link %q unescapes to %q, %v", path, link, back, err)
		}
	}
}

// TestDiffPaths reads the files a diff names from its headers only: a
// name with a space (whose ---/+++ lines end in a tab), a quoted one, a
// deleted file, a mode change and a binary file are each named once, and a
// hunk's line that looks like a header names nothing.
func TestDiffPaths(t *testing.T) {
	diff := "diff --git a/p/x.go b/p/x.go\nindex 1..2 100644\n--- a/p/x.go\n+++ b/p/x.go\n@@ -1 +1,2 @@\n-a\n+b\n+++ b/evil\n--- a/evil2\n" +
		"diff --git a/p/gone.txt b/p/gone.txt\ndeleted file mode 100644\n--- a/p/gone.txt\n+++ /dev/null\n" +
		"diff --git a/p/sp ace b/p/sp ace\nnew file mode 100644\n--- /dev/null\n+++ b/p/sp ace\t\n" +
		"diff --git \"a/p/\\303\\274\" \"b/p/\\303\\274\"\n--- \"a/p/\\303\\274\"\n+++ \"b/p/\\303\\274\"\n" +
		"diff --git a/p/run.sh b/p/run.sh\nold mode 100644\nnew mode 100755\n" +
		"diff --git a/p/img.png b/p/img.png\nBinary files a/p/img.png and b/p/img.png differ\n" +
		"diff --git a/p/x.go b/p/x.go\n" + // named again
		"diff --git a/cut b/cu [cut]\n"
	want := []string{"p/x.go", "p/gone.txt", "p/sp ace", "p/\u00fc", "p/run.sh", "p/img.png"}
	if got := diffPaths(diff); !slices.Equal(got, want) {
		t.Errorf("paths %q, want %q", got, want)
	}
}

// TestResultsLinkTheFilesTheyName checks the resource_link content of the
// tools that name files, after their text.
func TestResultsLinkTheFilesTheyName(t *testing.T) {
	ws := struct {
		*fakeFiles
		*fakeChanges
	}{&fakeFiles{}, &fakeChanges{
		changes: []workspace.FolderChange{{Path: "proj/a.go", Status: "modified"}, {Path: "proj/b c.txt", Status: "created"}},
		diff:    workspace.DiffResult{Text: "diff --git a/proj/a.go b/proj/a.go\n--- a/proj/a.go\n+++ b/proj/a.go\n"},
	}}
	tools := toolsOn(t, ws)
	for name, tc := range map[string]struct {
		args string
		want []string
	}{
		"write_file":        {`{"file_path":"d/n.txt","content":"x"}`, []string{FilesURIPrefix + "d/n.txt"}},
		"edit_file":         {`{"file_path":"e.txt","old_string":"a","new_string":"b"}`, []string{FilesURIPrefix + "e.txt"}},
		"rm":                {`{"path":"old"}`, []string{FilesURIPrefix + "old"}},
		"workspace_changes": {`{}`, []string{FilesURIPrefix + "proj/a.go", FilesURIPrefix + "proj/b%20c.txt"}},
		"workspace_diff":    {`{}`, []string{FilesURIPrefix + "proj/a.go"}},
		"ls":                {`{}`, nil},
	} {
		res := call(t, tools[name], tc.args)
		if res.IsError {
			t.Fatalf("%s: %s", name, text(res))
		}
		var got []string
		for i, c := range res.Content {
			if link, ok := c.(mcp.ResourceLink); ok {
				if i == 0 {
					t.Errorf("%s: a link comes before the text", name)
				}
				got = append(got, link.URI)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: links %q, want %q", name, got, tc.want)
		}
	}
}

// TestLinksOnlyWhatOpens: a changed path the files resource would refuse
// (a control character, a non-ASCII name, both of which a shell can make)
// gets no link and does not use up the cap; the good ones are linked, at
// most maxLinks.
func TestLinksOnlyWhatOpens(t *testing.T) {
	changes := []workspace.FolderChange{{Path: "p/bad\x01.txt", Status: "created"}, {Path: "p/\u00fc.txt", Status: "created"}}
	var want []string
	for i := range maxLinks + 20 {
		p := fmt.Sprintf("p/f%03d", i)
		changes = append(changes, workspace.FolderChange{Path: p, Status: "modified"})
		if i < maxLinks {
			want = append(want, FileLink(p))
		}
	}
	res := call(t, toolsOn(t, &fakeChanges{changes: changes})["workspace_changes"], `{}`)
	var got []string
	for _, c := range res.Content {
		if link, ok := c.(mcp.ResourceLink); ok {
			got = append(got, link.URI)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("links %q, want the first %d good paths", got, maxLinks)
	}
}
