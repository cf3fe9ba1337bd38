package profiles

import (
	"path/filepath"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// variablePattern is a reference to the server's environment, ${NAME}, or
// its escape, $${NAME}, which stands for the text ${NAME}. Other forms
// ($NAME, ${NAME:-x}) are not wink-mcp's and stay as they are.
var variablePattern = regexp.MustCompile(`\$?\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expand replaces ${NAME} with the server's environment variable NAME,
// which must be set and not empty, and $${NAME} with the text ${NAME}. It
// is applied to every value the file holds (never to keys), when the file
// is read: a setup command's ${NAME} is wink-mcp's, as an image's is, and
// a shell variable is written $NAME or $${NAME}.
func (r *reader) expand(s string, n *yaml.Node, profile, field string) (string, bool) {
	ok := true
	out := variablePattern.ReplaceAllStringFunc(s, func(ref string) string {
		if strings.HasPrefix(ref, "$$") {
			return ref[1:]
		}
		name := ref[2 : len(ref)-1]
		v, set := r.lookup(name)
		if !set || v == "" {
			r.fail(n, profile, field, "${%s} is not set in wink-mcp's environment: set it, or write $${%s} for the text ${%s} (a shell variable, say)",
				name, name, name)
			ok = false
		}
		return v
	})
	return out, ok
}

// fileID identifies the profiles file at path whatever path names it: its
// absolute path with links resolved (as given, made absolute, when it
// cannot be resolved).
func fileID(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	if resolved, err := filepath.EvalSymlinks(abs); err == nil {
		return resolved
	}
	return abs
}
