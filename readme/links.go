package readme

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// Link is a link found in a Markdown file: the line it is on (1-based) and
// its target as written.
type Link struct {
	Line   int
	Target string
}

// BrokenLinks checks every relative link in the Markdown files at paths
// (relative to root) and returns one message per link that leads nowhere:
// a file or folder that does not exist or lies outside root, or an #anchor
// that no heading of the target Markdown file gives, by GitHub's rules (see
// Anchors). Links with a scheme (https:, mailto:) are not followed.
func BrokenLinks(root string, paths []string) ([]string, error) {
	anchors := map[string]map[string]bool{}
	anchorsOf := func(file string) (map[string]bool, error) {
		if a, ok := anchors[file]; ok {
			return a, nil
		}
		text, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			return nil, err
		}
		anchors[file] = Anchors(string(text))
		return anchors[file], nil
	}
	var broken []string
	for _, file := range paths {
		text, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			return nil, err
		}
		for _, link := range Links(string(text)) {
			if why := checkLink(root, file, link.Target, anchorsOf); why != "" {
				broken = append(broken, fmt.Sprintf("%s:%d: %s: %s", file, link.Line, link.Target, why))
			}
		}
	}
	return broken, nil
}

// scheme matches a target that names its own protocol.
var scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// checkLink says why target, a link in file, leads nowhere, or returns "".
func checkLink(root, file, target string, anchorsOf func(string) (map[string]bool, error)) string {
	if scheme.MatchString(target) {
		return ""
	}
	pathPart, anchor, hasAnchor := strings.Cut(target, "#")
	dest := file
	if pathPart != "" {
		p, err := url.PathUnescape(pathPart)
		if err != nil {
			return "not a valid path"
		}
		dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(p))
		if dest == ".." || strings.HasPrefix(dest, ".."+string(filepath.Separator)) || filepath.IsAbs(p) {
			return "leads outside the repository"
		}
		if _, err := os.Stat(filepath.Join(root, dest)); err != nil {
			return "no such file or folder"
		}
	}
	if !hasAnchor {
		return ""
	}
	if !strings.HasSuffix(dest, ".md") {
		return "an #anchor into a file that is not Markdown"
	}
	a, err := url.PathUnescape(anchor)
	if err != nil {
		return "not a valid anchor"
	}
	known, err := anchorsOf(dest)
	if err != nil {
		return err.Error()
	}
	if !known[a] {
		return fmt.Sprintf("no heading of %s has the anchor #%s", filepath.ToSlash(dest), a)
	}
	return ""
}

var (
	// atxHeading is a heading line: up to three spaces, 1-6 #, then text.
	atxHeading = regexp.MustCompile(`^ {0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	// setextUnderline turns the line above it into a heading.
	setextUnderline = regexp.MustCompile(`^ {0,3}(?:=+|-+)[ \t]*$`)
	// htmlAnchor is an explicit anchor: <a name="x"> or id="x".
	htmlAnchor = regexp.MustCompile(`<a\s[^>]*\b(?:name|id)\s*=\s*"([^"]*)"`)
	// inlineLink is a link's or image's text, rendered as that text.
	inlineLink = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	// htmlTag is markup a heading's rendered text does not show.
	htmlTag = regexp.MustCompile(`<[^>]*>`)
	// codeSpan is inline code: a run of backticks and the same run closing it.
	codeSpan = regexp.MustCompile("(`+)[^`]*?`+")
	// referenceDefinition is a link reference definition: [label]: target.
	referenceDefinition = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?`)
)

// Anchors returns the anchors GitHub gives the headings of a Markdown text
// (ATX and setext headings outside code blocks), and the explicit ones of
// <a name> or <a id> tags. A heading's anchor is its rendered text in lower
// case, with every character that is not a letter, a digit, a mark, "_",
// "-" or a space left out and each space made "-"; a second heading with the
// same anchor gets "-1", a third "-2", and so on.
func Anchors(markdown string) map[string]bool {
	anchors := map[string]bool{}
	add := func(heading string) {
		base := slug(heading)
		a := base
		for n := 1; anchors[a]; n++ {
			a = fmt.Sprintf("%s-%d", base, n)
		}
		anchors[a] = true
	}
	previous := ""
	forEachLine(markdown, func(_ int, line string, inCode bool) {
		if inCode {
			previous = ""
			return
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		switch {
		case atxHeading.MatchString(line):
			add(atxHeading.FindStringSubmatch(line)[1])
			previous = ""
			return
		case setextUnderline.MatchString(line) && isParagraphLine(previous):
			add(previous)
			previous = ""
			return
		}
		previous = line
	})
	return anchors
}

// isParagraphLine says whether line could be the text of a setext heading:
// not blank, and not a list item, quote, table row or indented code.
func isParagraphLine(line string) bool {
	t := strings.TrimSpace(line)
	if t == "" || strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "\t") {
		return false
	}
	for _, p := range []string{"- ", "* ", "+ ", "> ", "|"} {
		if strings.HasPrefix(t, p) {
			return false
		}
	}
	return true
}

// slug is GitHub's anchor for a heading's Markdown text.
func slug(heading string) string {
	text := inlineLink.ReplaceAllString(heading, "$1")
	text = htmlTag.ReplaceAllString(text, "")
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(text)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Links returns the links and images of a Markdown text, inline ones and
// reference definitions, leaving out code blocks and code spans.
func Links(markdown string) []Link {
	var links []Link
	forEachLine(markdown, func(n int, line string, inCode bool) {
		if inCode {
			return
		}
		if m := referenceDefinition.FindStringSubmatch(line); m != nil {
			links = append(links, Link{Line: n, Target: m[1]})
			return
		}
		line = codeSpan.ReplaceAllString(line, "")
		for rest := line; ; {
			i := strings.Index(rest, "](")
			if i < 0 {
				break
			}
			rest = rest[i+2:]
			target, after := linkTarget(rest)
			if target != "" {
				links = append(links, Link{Line: n, Target: target})
			}
			rest = after
		}
	})
	return links
}

// linkTarget reads a link's destination from s, the text after "](": up to
// the closing parenthesis (nested ones balanced), without a title or the
// angle brackets of <target>. It returns the rest of s after it.
func linkTarget(s string) (target, rest string) {
	depth := 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			if depth == 0 {
				dest := strings.TrimSpace(s[:i])
				if strings.HasPrefix(dest, "<") {
					dest, _, _ = strings.Cut(dest[1:], ">")
				} else if j := strings.IndexAny(dest, " \t"); j >= 0 {
					dest = dest[:j] // a title follows
				}
				return dest, s[i+1:]
			}
			depth--
		}
	}
	return "", s
}

// forEachLine calls f with each line of a Markdown text, its number
// (1-based), and whether it is inside a fenced code block (its fences
// included). Fences may be indented, as in a list item.
func forEachLine(markdown string, f func(n int, line string, inCode bool)) {
	fence := ""
	for i, line := range strings.Split(markdown, "\n") {
		t := strings.TrimLeft(line, " \t")
		run := fenceRun(t)
		switch {
		case fence == "" && run != "":
			fence = run
			f(i+1, line, true)
		case fence != "":
			if run != "" && run[0] == fence[0] && len(run) >= len(fence) && strings.TrimSpace(t[len(run):]) == "" {
				fence = ""
			}
			f(i+1, line, true)
		default:
			f(i+1, line, false)
		}
	}
}

// fenceRun returns the run of three or more backticks or tildes that
// starts t, or "".
func fenceRun(t string) string {
	if !strings.HasPrefix(t, "```") && !strings.HasPrefix(t, "~~~") {
		return ""
	}
	n := 0
	for n < len(t) && t[n] == t[0] {
		n++
	}
	return t[:n]
}
