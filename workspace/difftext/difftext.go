// Package difftext bounds the unified diffs a session shows, of its
// mounted folders' changes or between its checkpoints: a diff is written
// into a buffer that keeps at most MaxBytes, cut at a line's end, and
// says when it stopped there. It has no state and no lock.
package difftext

import (
	"bytes"
	"errors"
	"io"
)

// Limits of a diff.
const (
	// TextLimit is the largest file a diff shows as text.
	TextLimit = 1 << 20
	// MaxBytes bounds a whole diff; past it the diff stops, saying so.
	MaxBytes = 16 << 20
)

// Result is a unified diff of a session's changes.
type Result struct {
	// Text is the diff, in git's format, with workspace paths.
	Text string
	// Truncated is true when the diff passed MaxBytes and stops there.
	Truncated bool
}

// Capped returns what write writes, up to MaxBytes: a write that passes
// the limit stops write with an error of the buffer's, which Capped turns
// into a truncated Result, not an error. Any other error of write's is
// returned with what it wrote before it.
func Capped(write func(w io.Writer) error) (Result, error) {
	w := &cappedBuffer{limit: MaxBytes}
	err := write(w)
	if errors.Is(err, errFull) {
		return Result{Text: w.String(), Truncated: true}, nil
	}
	return Result{Text: w.String()}, err
}

// errFull is returned by cappedBuffer once its limit is reached.
var errFull = errors.New("diff limit reached")

// cappedBuffer keeps up to limit bytes, cut at a line's end, then refuses more.
type cappedBuffer struct {
	bytes.Buffer
	limit int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.limit - b.Len(); len(p) > room {
		if cut := bytes.LastIndexByte(p[:max(room, 0)], '\n'); cut >= 0 {
			b.Buffer.Write(p[:cut+1])
		}
		return 0, errFull
	}
	return b.Buffer.Write(p)
}
