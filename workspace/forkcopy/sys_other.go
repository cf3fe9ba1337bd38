//go:build !linux

package forkcopy

import (
	"io/fs"
	"os"
	"time"
)

// freeze is Linux's.
func freeze(string) (func() error, error) { return nil, ErrUnsupported }

// copyExtents copies all of in: without SEEK_DATA, holes are not found.
func copyExtents(in, out *os.File, size int64) error { return copyPlain(in, out, 0, size) }

// copyRange copies n bytes of in from off to out at the same offset.
func copyRange(in, out *os.File, off, n int64) error { return copyPlain(in, out, off, n) }

// copySpecial leaves out what is not a file, a directory or a link.
func copySpecial(string, string, fs.FileInfo) (bool, error) { return false, nil }

// copyMeta gives to path's mode.
func copyMeta(_, to string, info fs.FileInfo) error {
	if info.Mode()&fs.ModeSymlink != 0 || info.IsDir() {
		return nil
	}
	return os.Chmod(to, info.Mode()&fs.ModePerm)
}

// changeTime is not known here.
func changeTime(fs.FileInfo) time.Time { return zeroTime }

// Reflinks is Linux's: elsewhere a copy is taken to copy the bytes.
func Reflinks(string) (bool, error) { return false, nil }
