// Package glob compiles and matches the path patterns of wink-mcp's glob and
// grep tools: "*", "?" and "[...]" within one path segment, as path.Match
// reads them ("[!...]" is accepted for "[^...]"), and "**" as a whole
// segment for any number of segments. It has
// no brace expansion. Matching takes time proportional to the pattern's
// segments times the path's, so no pattern can make it explode.
package glob

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// Limits of a pattern.
const (
	// MaxLength bounds a pattern's length in bytes.
	MaxLength = 1024
	// MaxSegments bounds a pattern's segments.
	MaxSegments = 64
)

// Pattern is a compiled pattern. It is immutable and safe for concurrent use.
type Pattern struct {
	segs     []string
	anyDepth bool
}

// Compile checks a pattern and compiles it. Patterns are relative: a leading
// "/", a ".." segment, control characters and non-ASCII are refused, as is a
// segment path.Match cannot parse (such as "[" or "[a-").
func Compile(pattern string) (*Pattern, error) {
	switch {
	case pattern == "":
		return nil, errors.New("the pattern is empty")
	case len(pattern) > MaxLength:
		return nil, fmt.Errorf("the pattern is %d bytes; the limit is %d", len(pattern), MaxLength)
	case strings.HasPrefix(pattern, "/"):
		return nil, errors.New("the pattern is absolute; patterns are relative to the search path")
	}
	for i, r := range pattern {
		if r < 0x20 || r >= 0x7f {
			return nil, fmt.Errorf("character %U at byte %d is not allowed; patterns are printable ASCII", r, i)
		}
	}
	var segs []string
	for _, s := range strings.Split(pattern, "/") {
		switch s {
		case "", ".":
			continue
		case "..":
			return nil, errors.New(`".." is not allowed in a pattern`)
		}
		if s == "**" && len(segs) > 0 && segs[len(segs)-1] == "**" {
			continue // "**/**" means what "**" means
		}
		s = shellNegation(s)
		if _, err := path.Match(s, ""); err != nil {
			return nil, fmt.Errorf("segment %q is not a valid pattern (an unclosed [ or a trailing \\?)", s)
		}
		segs = append(segs, s)
	}
	if len(segs) == 0 {
		return nil, errors.New("the pattern matches nothing but the search path itself")
	}
	if len(segs) > MaxSegments {
		return nil, fmt.Errorf("the pattern has %d segments; the limit is %d", len(segs), MaxSegments)
	}
	p := &Pattern{segs: segs}
	for _, s := range segs {
		if s == "**" {
			p.anyDepth = true
		}
	}
	return p, nil
}

// MaxDepth is the deepest a match can be, in segments; -1 when "**" makes it unbounded.
func (p *Pattern) MaxDepth() int {
	if p.anyDepth {
		return -1
	}
	return len(p.segs)
}

// HasSlash reports whether the pattern spans directories (rather than naming a file).
func (p *Pattern) HasSlash() bool { return len(p.segs) > 1 || p.anyDepth }

// Match reports whether a slash-separated relative path matches.
func (p *Pattern) Match(name string) bool {
	parts := strings.Split(name, "/")
	// memo[i][j] caches whether segs[i:] matches parts[j:]: 0 unknown, 1 yes, 2 no.
	memo := make([][]uint8, len(p.segs)+1)
	for i := range memo {
		memo[i] = make([]uint8, len(parts)+1)
	}
	var match func(i, j int) bool
	match = func(i, j int) bool {
		if i == len(p.segs) {
			return j == len(parts)
		}
		if m := memo[i][j]; m != 0 {
			return m == 1
		}
		var ok bool
		if p.segs[i] == "**" {
			ok = match(i+1, j) || (j < len(parts) && match(i, j+1))
		} else if j < len(parts) {
			seg, _ := path.Match(p.segs[i], parts[j])
			ok = seg && match(i+1, j+1)
		}
		memo[i][j] = 2
		if ok {
			memo[i][j] = 1
		}
		return ok
	}
	return match(0, 0)
}

// shellNegation rewrites the shell's "[!...]" class to path.Match's "[^...]".
func shellNegation(seg string) string {
	b := []byte(seg)
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '[':
			if i+1 < len(b) && b[i+1] == '!' {
				b[i+1] = '^'
			}
		}
	}
	return string(b)
}
