// Package display makes text that a model or a workspace wrote (a
// checkpoint message, a file name, a job's command, a command's output
// line) safe to show in a terminal or a listing: one line, no terminal
// escape, no character that reorders or hides what follows. Text that is
// already safe is shown as it is; other text is quoted, with every unsafe
// character escaped visibly, never dropped. Structured results keep the
// exact value; only what a human or a listing reads goes through here.
package display

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Text returns s unchanged when every character of it is printable (no
// control character, C0 or C1, no escape, newline or tab, no bidi or other
// format character, valid UTF-8) and it does not begin with a double
// quote; otherwise it returns s as a Go string literal, in double quotes
// with those characters escaped (\n, \x1b, \u202e, \xff). A quoted result
// always begins with a quote and an unquoted one never does, so the two
// cannot be confused.
func Text(s string) string {
	if Safe(s) {
		return s
	}
	return strconv.Quote(s)
}

// Safe reports whether Text shows s as it is.
func Safe(s string) bool {
	if strings.HasPrefix(s, `"`) {
		return false
	}
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return false
			}
		}
		if !strconv.IsPrint(r) {
			return false
		}
	}
	return true
}

// Texts applies Text to each of ss, joined by sep (a job's argv, a list of
// names).
func Texts(ss []string, sep string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = Text(s)
	}
	return strings.Join(out, sep)
}
