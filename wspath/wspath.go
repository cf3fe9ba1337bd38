// Package wspath holds the rules every path a client gives for the
// workspace keeps (relative, ASCII, at most 16 segments of at most 80
// characters, no climbing out) and their normal form. It depends on
// nothing of the project, so the tools, the server and the fuzzer use the
// rules without building the Podman engine.
package wspath

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The limits of a workspace path, and where paths are relative to.
const (
	// Root is where the workspace appears inside the container.
	Root = "/workspace"
	// MaxSegments is the most segments a normalised path may have.
	MaxSegments = 16
	// MaxSegmentLength is the most characters one segment may have.
	MaxSegmentLength = 80
	// MaxLength is the longest path accepted before normalisation: the
	// longest normalised path (16 segments of 80 characters and 15 slashes).
	MaxLength = MaxSegments*MaxSegmentLength + MaxSegments - 1
)

// ErrInvalid is wrapped by every error Clean returns.
var ErrInvalid = errors.New("invalid workspace path")

// Error says which rule a path broke. It wraps ErrInvalid.
type Error struct {
	Path string
	Rule string
}

// Error names the path and the rule.
func (e *Error) Error() string {
	return fmt.Sprintf("path %q: %s", truncateForMessage(e.Path), e.Rule)
}

// Unwrap returns ErrInvalid.
func (e *Error) Unwrap() error { return ErrInvalid }

// IsClean says p keeps the path rules and is already in Clean's
// form: a name a client can use as it is, such as in a resource URI.
func IsClean(p string) bool {
	clean, err := Clean(p)
	return err == nil && clean == p
}

// Clean checks a path given by a client and returns it normalised:
// relative to the workspace, segments joined by single slashes, "." segments
// dropped and ".." resolved, "" for the workspace root. It rejects absolute
// paths, paths that climb out of the workspace, non-ASCII and control
// characters, and paths over the segment limits. The string rules are the
// first line of defence; the agent confines every access in the kernel too.
func Clean(p string) (string, error) {
	fail := func(format string, args ...any) (string, error) {
		return "", &Error{Path: p, Rule: fmt.Sprintf(format, args...)}
	}
	if len(p) > MaxLength {
		return fail("is %d characters long; the limit is %d (%d segments of at most %d characters)", len(p), MaxLength, MaxSegments, MaxSegmentLength)
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
		if len(segs) > MaxSegments {
			return fail("has more than %d segments", MaxSegments)
		}
	}
	if len(segs) > 0 && segs[0] == "~" {
		// "./~" or "a/../~" would clean to "~", which Clean refuses.
		return fail("starts with ~ once cleaned, which is not expanded; paths are relative to %s", Root)
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
