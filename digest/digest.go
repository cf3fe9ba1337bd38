// Package digest keeps the workspace digest: a short, task-agnostic
// summary of a repository (its layout and notable directories, the
// commands that build, test, lint and format it, its caveats and
// recurring pitfalls) that the client's own model writes with the
// workspace_digest tool, and that the next session of the same
// repository starts with.
//
// A digest is looked up in the order the workspace tools spec gives: the
// session's latest, then the one saved for the repository by the same
// principal (Store), then a placeholder generated from the folder's own
// files (Placeholder), marked as generated. A repository is named by what
// identifies it (Repository): its git remote and the folder's path in it,
// else the folder's path.
package digest

import (
	"fmt"
	"time"
	"unicode/utf8"
)

// MaxBytes bounds a digest's text.
const MaxBytes = 16 << 10

// Source says where a digest came from.
type Source string

// The sources of a digest, in the order they are looked up.
const (
	// FromSession is the session's latest digest, saved with scope
	// session (or global) during the session.
	FromSession Source = "session"
	// FromStore is the digest saved for the repository with scope global,
	// by this principal, in an earlier session.
	FromStore Source = "global"
	// Generated is the server's placeholder, made from the folder's files.
	Generated Source = "generated"
)

// Digest is a workspace digest and where it came from.
type Digest struct {
	// Text is the digest, Markdown.
	Text string
	// Source says where it came from.
	Source Source
	// Repository names the repository it is about ("" when the workspace
	// mounts no folder).
	Repository string
	// Saved is when it was saved (zero for a placeholder).
	Saved time.Time
}

// Check refuses a text that is not a digest: empty, past MaxBytes, not
// UTF-8, or holding control characters other than newlines and tabs.
func Check(text string) error {
	switch {
	case text == "":
		return fmt.Errorf("text is empty: give the digest's text (Markdown, at most %d bytes)", MaxBytes)
	case len(text) > MaxBytes:
		return fmt.Errorf("text is %d bytes, more than a digest's %d: keep it to the layout, the commands and the caveats", len(text), MaxBytes)
	case !utf8.ValidString(text):
		return fmt.Errorf("text is not valid UTF-8: a digest is text")
	}
	for i, r := range text {
		if hidden(r) {
			return fmt.Errorf("text holds the control character %U at byte %d: a digest is plain text (newlines and tabs only)", r, i)
		}
	}
	return nil
}

// hidden says whether r changes how text around it shows rather than
// showing itself: a C0 or C1 control other than newline and tab (a
// carriage return overwrites a line), DEL, or a bidirectional override.
func hidden(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r >= 0x7f && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}
