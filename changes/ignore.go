package changes

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// maxIgnoreFile is the most of one .gitignore file read; rules past it are not.
const maxIgnoreFile = 1 << 20

// ignoreRules are the host folder's own ignore rules, as git reads them:
// .git/info/exclude, then each directory's .gitignore, deeper files winning,
// and within a file the last rule that matches. They are read from the host
// copy (the base tree) only, so a .gitignore the model writes cannot hide a
// change from a patch.
type ignoreRules struct {
	base  tree
	files map[string][]ignoreRule // rules by the directory they apply under; read on first use
}

// ignoreRule is one pattern line.
type ignoreRule struct {
	re      *regexp.Regexp // matches a path relative to the rule's directory
	negate  bool
	dirOnly bool
	where   string // "sub/.gitignore:3: *.pyc"
}

func newIgnoreRules(base tree) *ignoreRules {
	return &ignoreRules{base: base, files: map[string][]ignoreRule{}}
}

// ignoredBy returns the rule that ignores the entry at rel, a file unless
// isDir, or "" when none does. An entry under an ignored directory is
// ignored, whatever later rules say, as in git.
func (r *ignoreRules) ignoredBy(rel string, isDir bool) string {
	parts := strings.Split(rel, "/")
	for i := 1; i <= len(parts); i++ {
		dir := i < len(parts) || isDir
		if rule := r.match(strings.Join(parts[:i], "/"), dir); rule != nil && !rule.negate {
			return rule.where
		}
	}
	return ""
}

// match returns the last rule that matches the entry at rel, or nil.
func (r *ignoreRules) match(rel string, isDir bool) *ignoreRule {
	var last *ignoreRule
	try := func(dir string, rules []ignoreRule) {
		sub := strings.TrimPrefix(rel, dir+"/")
		if dir == "" {
			sub = rel
		}
		for i := range rules {
			if (!rules[i].dirOnly || isDir) && rules[i].re.MatchString(sub) {
				last = &rules[i]
			}
		}
	}
	try("", r.load(".git/info/exclude", ""))
	try("", r.load(".gitignore", ""))
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ { // shallow to deep: deeper files win
		dir := strings.Join(parts[:i], "/")
		try(dir, r.load(dir+"/.gitignore", dir))
	}
	return last
}

// load reads and caches the rules of one file, applying under dir.
func (r *ignoreRules) load(file, dir string) []ignoreRule {
	if rules, ok := r.files[file]; ok {
		return rules
	}
	// A file that is missing, not a regular file or unreadable has no
	// rules, so nothing is left out because of it.
	var rules []ignoreRule
	if info, err := r.base.lstat(file); err == nil && info.Mode().IsRegular() {
		if f, err := r.base.open(file); err == nil {
			rules = parseIgnore(io.LimitReader(f, maxIgnoreFile), file)
			f.Close()
		}
	}
	r.files[file] = rules
	return rules
}

// parseIgnore reads gitignore lines (see gitignore(5)).
func parseIgnore(rd io.Reader, file string) []ignoreRule {
	var rules []ignoreRule
	sc := bufio.NewScanner(rd)
	sc.Buffer(nil, maxIgnoreFile)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSuffix(sc.Text(), "\r")
		line = trimTrailingSpaces(line)
		if line == "" || line[0] == '#' {
			continue
		}
		rule := ignoreRule{where: fmt.Sprintf("%s:%d: %s", file, n, line)}
		if line[0] == '!' {
			rule.negate, line = true, line[1:]
		} else if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
			line = line[1:]
		}
		if strings.HasSuffix(line, "/") {
			rule.dirOnly, line = true, strings.TrimRight(line, "/")
		}
		if line == "" {
			continue
		}
		anchored := strings.Contains(line, "/")
		line = strings.TrimPrefix(line, "/")
		prefix := "^(?:.*/)?"
		if anchored {
			prefix = "^"
		}
		re, err := regexp.Compile(prefix + globRegexp(line) + "$")
		if err != nil {
			continue // git ignores a pattern it cannot read, too
		}
		rule.re = re
		rules = append(rules, rule)
	}
	return rules
}

// trimTrailingSpaces drops trailing spaces unless escaped with a backslash.
func trimTrailingSpaces(s string) string {
	for strings.HasSuffix(s, " ") && !strings.HasSuffix(s, `\ `) {
		s = s[:len(s)-1]
	}
	return s
}

// globRegexp translates a gitignore glob: "*" and "?" stop at "/", "**"
// between slashes spans directories, "[...]" is a class, "\" escapes.
func globRegexp(glob string) string {
	var b strings.Builder
	for i := 0; i < len(glob); i++ {
		c := glob[i]
		switch {
		case c == '*' && strings.HasPrefix(glob[i:], "**") && (i == 0 || glob[i-1] == '/') && (i+2 == len(glob) || glob[i+2] == '/'):
			if i+2 == len(glob) {
				b.WriteString(".*")
			} else {
				b.WriteString("(?:.*/)?")
				i++ // the slash
			}
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '[':
			end := strings.IndexByte(glob[i+1:], ']')
			if end < 0 {
				b.WriteString(`\[`)
				continue
			}
			class := glob[i+1 : i+1+end]
			if end == 0 { // "[]...]": the first ] is a member
				if next := strings.IndexByte(glob[i+2:], ']'); next >= 0 {
					class, end = glob[i+1:i+2+next], next+1
				}
			}
			b.WriteString(classRegexp(class))
			i += end + 1
		case c == '\\' && i+1 < len(glob):
			i++
			b.WriteString(regexp.QuoteMeta(glob[i : i+1]))
		default:
			b.WriteString(regexp.QuoteMeta(glob[i : i+1]))
		}
	}
	return b.String()
}

// classRegexp translates the inside of a bracket expression.
func classRegexp(class string) string {
	var b bytes.Buffer
	b.WriteString("[")
	if strings.HasPrefix(class, "!") || strings.HasPrefix(class, "^") {
		b.WriteString("^/")
		class = class[1:]
	}
	for _, r := range class {
		if r == '\\' || r == '[' || r == ']' || r == '^' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteString("]")
	return b.String()
}
