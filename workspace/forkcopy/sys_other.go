//go:build !linux

package forkcopy

import (
	"os"
)

// copyExtents copies all of in: without SEEK_DATA, holes are not found.
func copyExtents(in, out *os.File, size int64) error { return copyPlain(in, out, 0, size) }

// copyRange copies n bytes of in from off to out at the same offset.
func copyRange(in, out *os.File, off, n int64) error { return copyPlain(in, out, off, n) }

// Tree is Linux's: the copy opens every entry from its parent's
// descriptor, without following a link.
func Tree(string, string) error { return ErrUnsupported }

// Reflinks is Linux's: elsewhere no workspace is forked.
func Reflinks(string) (bool, error) { return false, ErrUnsupported }
