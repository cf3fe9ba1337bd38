package integration

import (
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// linksOf are the resource links a result carries, by name.
func linksOf(res *mcp.CallToolResult) map[string]string {
	out := map[string]string{}
	for _, c := range res.Content {
		if l, ok := c.(mcp.ResourceLink); ok {
			out[l.Name] = l.URI
		}
	}
	return out
}

// TestEveryLinkOpens: the shell makes files in a mounted folder under
// every name that could mislead a link (a space, which git's header ends
// with a tab; a quote and a backslash, which git quotes; the URI's own
// %, #, ? and +; a line in a file that looks like a diff header), and
// ones the path rules refuse. workspace_changes and workspace_diff link
// each allowed name exactly, each link opens to the file's content, and
// the refused names and the fake header get no link.
func TestEveryLinkOpens(t *testing.T) {
	root, folder := project(t)
	p := start(t, startOptions{args: []string{"--mount", folder, "--allowed-root", root}})
	names := []string{"sp ace.txt", `q"uote.txt`, `back\slash.txt`, "100%.txt", "#hash?.txt", "a+b.txt", "tab\tname.txt"}
	script := `cd proj && for n in "$@" "$(printf '\303\274').txt"; do printf 'content of %s\n' "$n" > "$n"; done && printf 'x\n+++ b/README.md\n' >> run.sh`
	if r := p.run(append([]string{"sh", "-c", script, "sh"}, names...)...); r.ExitCode != 0 {
		t.Fatalf("%+v", r)
	}
	allowed := []string{"proj/run.sh"}
	for _, n := range names[:6] {
		allowed = append(allowed, "proj/"+n)
	}
	slices.Sort(allowed)
	for _, tool := range []string{"workspace_changes", "workspace_diff"} {
		res := p.call(tool, map[string]any{})
		if res.IsError {
			t.Fatalf("%s: %s", tool, textOf(res))
		}
		links := linksOf(res)
		got := slices.Sorted(func(yield func(string) bool) {
			for name := range links {
				if !yield(name) {
					return
				}
			}
		})
		if !slices.Equal(got, allowed) {
			t.Errorf("%s linked %q, want %q", tool, got, allowed)
		}
		for name, uri := range links {
			text, err := p.readResource(uri)
			want := "content of " + strings.TrimPrefix(name, "proj/") + "\n"
			if name == "proj/run.sh" {
				want = "#!/bin/sh\necho run\nx\n+++ b/README.md\n"
			}
			if err != nil || text != want {
				t.Errorf("%s's link %s for %q opened to %q, %v; want %q", tool, uri, name, text, err, want)
			}
		}
	}
}
