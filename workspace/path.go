package workspace

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Path rules shared by every tool that takes a workspace path.
const (
	// Root is where the workspace appears inside the container.
	Root = "/workspace"
	// MaxPathSegments is the most segments a normalised path may have.
	MaxPathSegments = 16
	// MaxSegmentLength is the most characters one segment may have.
	MaxSegmentLength = 80
	// MaxPathLength is the longest path accepted before normalisation: the
	// longest normalised path (16 segments of 80 characters and 15 slashes).
	MaxPathLength = MaxPathSegments*MaxSegmentLength + MaxPathSegments - 1
)

// ErrInvalidPath is wrapped by every error CleanPath returns.
var ErrInvalidPath = errors.New("invalid workspace path")

// PathError says which rule a path broke. It wraps ErrInvalidPath.
type PathError struct {
	Path string
	Rule string
}

// Error names the path and the rule.
func (e *PathError) Error() string {
	return fmt.Sprintf("path %q: %s", truncateForMessage(e.Path), e.Rule)
}

// Unwrap returns ErrInvalidPath.
func (e *PathError) Unwrap() error { return ErrInvalidPath }

// IsCleanPath says p keeps the path rules and is already in CleanPath's
// form: a name a client can use as it is, such as in a resource URI.
func IsCleanPath(p string) bool {
	clean, err := CleanPath(p)
	return err == nil && clean == p
}

// CleanPath checks a path given by a client and returns it normalised:
// relative to the workspace, segments joined by single slashes, "." segments
// dropped and ".." resolved, "" for the workspace root. It rejects absolute
// paths, paths that climb out of the workspace, non-ASCII and control
// characters, and paths over the segment limits. The string rules are the
// first line of defence; the agent confines every access in the kernel too.
func CleanPath(p string) (string, error) {
	fail := func(format string, args ...any) (string, error) {
		return "", &PathError{Path: p, Rule: fmt.Sprintf(format, args...)}
	}
	if len(p) > MaxPathLength {
		return fail("is %d characters long; the limit is %d (%d segments of at most %d characters)", len(p), MaxPathLength, MaxPathSegments, MaxSegmentLength)
	}
	for i, r := range p {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(p[i:], "\uFFFD"):
			return fail("byte %d is not valid UTF-8; paths must be ASCII", i)
		case r >= utf8.RuneSelf:
			return fail("character %U at byte %d is not ASCII; paths must be ASCII", r, i)
		case r < 0x20 || r == 0x7f:
			return fail("control character %#02x at byte %d is not allowed", r, i)
		}
	}
	if strings.HasPrefix(p, "/") {
		rel := strings.TrimLeft(strings.TrimPrefix(p, Root), "/")
		if rel == "" {
			rel = "."
		}
		return fail("is absolute; paths are relative to %s (for this one, use %q)", Root, rel)
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		return fail("starts with ~, which is not expanded; paths are relative to %s", Root)
	}
	var segs []string
	for _, s := range strings.Split(p, "/") {
		switch s {
		case "", ".":
		case "..":
			if len(segs) == 0 {
				return fail(`leaves the workspace: ".." may not climb above %s`, Root)
			}
			segs = segs[:len(segs)-1]
		default:
			if len(s) > MaxSegmentLength {
				return fail("segment %q is %d characters long; the limit is %d", truncateForMessage(s), len(s), MaxSegmentLength)
			}
			segs = append(segs, s)
		}
		if len(segs) > MaxPathSegments {
			return fail("has more than %d segments", MaxPathSegments)
		}
	}
	return strings.Join(segs, "/"), nil
}

// truncateForMessage keeps error messages short when a path is huge.
func truncateForMessage(s string) string {
	const max = 120
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}
