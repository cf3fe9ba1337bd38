package readme

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestAnchors(t *testing.T) {
	t.Parallel()
	text := strings.Join([]string{
		"# wink-mcp",
		"## Network: egress by allowlist, and ports the user can open",
		"### `evaluate_python`",
		"### Kept workspaces: resume after a restart",
		"## Speed",
		"## Speed",
		"## Speed ##",
		"## See [Where it runs](#where-it-runs) <em>now</em>",
		"#not-a-heading",
		"Setext heading",
		"==============",
		"- a list item",
		"---",
		"```sh",
		"# a comment in code, not a heading",
		"```",
		"   ~~~~",
		"## fenced by tildes",
		"   ~~~~",
		`<a name="explicit"></a>`,
		"## Ünïcode and 日本語 stay",
	}, "\n")
	got := Anchors(text)
	want := []string{"wink-mcp", "network-egress-by-allowlist-and-ports-the-user-can-open", "evaluate_python",
		"kept-workspaces-resume-after-a-restart", "speed", "speed-1", "speed-2", "see-where-it-runs-now", "setext-heading",
		"explicit", "ünïcode-and-日本語-stay"}
	for _, a := range want {
		if !got[a] {
			t.Errorf("anchor %q missing; got %v", a, got)
		}
	}
	for _, a := range []string{"not-a-heading", "a-comment-in-code-not-a-heading", "fenced-by-tildes", "a-list-item"} {
		if got[a] {
			t.Errorf("anchor %q should not exist", a)
		}
	}
}

func TestLinks(t *testing.T) {
	t.Parallel()
	text := strings.Join([]string{
		"See [Doctor](docs/doctor.md#doctor) and [a folder](profiles/ \"title\").",
		"Code `[not](a-link.md)` stays code; ![an image](img/x.png).",
		"[Safe by",
		"default](#safe-by-default) spans lines; [nested](a_(b).md); [angle](<with space.md>)",
		"```json",
		`{"see": "[not](in-code.md)"}`,
		"```",
		"[ref]: CONTRIBUTING.md",
		"<https://example.com> and [web](https://modelcontextprotocol.io)",
	}, "\n")
	var got []string
	for _, l := range Links(text) {
		got = append(got, l.Target)
	}
	want := []string{"docs/doctor.md#doctor", "profiles/", "img/x.png", "#safe-by-default", "a_(b).md", "with space.md",
		"CONTRIBUTING.md", "https://modelcontextprotocol.io"}
	if !slices.Equal(got, want) {
		t.Errorf("links %q, want %q", got, want)
	}
}

func TestBrokenLinks(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", "# Top\n\n[ok](docs/a.md#a-page) [ok](#top) [ok](docs/) [ok](https://x.invalid/nowhere)\n"+
		"[gone](docs/missing.md) [bad anchor](docs/a.md#nope) [here](#nowhere) [out](../elsewhere.md)\n")
	write("docs/a.md", "# A page\n\n[up](../README.md#top) [code](../go.mod#L1) [space](my%20file.md)\n")
	write("docs/my file.md", "# x\n")
	write("go.mod", "module x\n")
	got, err := BrokenLinks(root, []string{"README.md", "docs/a.md"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"README.md:4: docs/missing.md: no such file or folder",
		"README.md:4: docs/a.md#nope: no heading of docs/a.md has the anchor #nope",
		"README.md:4: #nowhere: no heading of README.md has the anchor #nowhere",
		"README.md:4: ../elsewhere.md: leads outside the repository",
		"docs/a.md:3: ../go.mod#L1: an #anchor into a file that is not Markdown",
	}
	if !slices.Equal(got, want) {
		t.Errorf("broken links:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// docs are the project's Markdown documents whose links must resolve.
func docs(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) == 0 {
		t.Fatal("no pages in docs/")
	}
	files := []string{"README.md", "ARCHITECTURE.md", "CONTRIBUTING.md"}
	for _, p := range pages {
		files = append(files, "docs/"+filepath.Base(p))
	}
	return files
}

// TestDocsLinksResolve follows every relative link and #anchor of the
// README, docs/, ARCHITECTURE.md and CONTRIBUTING.md, as GitHub would.
func TestDocsLinksResolve(t *testing.T) {
	t.Parallel()
	broken, err := BrokenLinks("..", docs(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range broken {
		t.Error(b)
	}
}

// readmeMaxBytes bounds the README: a front door with the two commands, a
// snippet per client and links, not the whole house.
const readmeMaxBytes = 15_000

// TestReadmeIsAFrontDoor keeps the README short, and every page of docs/
// reachable from it.
func TestReadmeIsAFrontDoor(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) > readmeMaxBytes {
		t.Errorf("README.md has %d bytes, over %d: move the detail to a page of docs/ and link it", len(raw), readmeMaxBytes)
	}
	linked := map[string]bool{}
	for _, l := range Links(string(raw)) {
		page, _, _ := strings.Cut(l.Target, "#")
		linked[page] = true
	}
	for _, f := range docs(t) {
		if f != "README.md" && !linked[f] {
			t.Errorf("README.md does not link %s", f)
		}
	}
}
