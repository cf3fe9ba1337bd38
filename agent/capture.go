package agent

import (
	"strings"
	"unicode/utf8"
)

// capture is an io.Writer that keeps the first limit bytes written to it and
// counts all of them, so a command's output costs bounded memory however much
// it prints. It is not safe for concurrent use; os/exec copies each stream
// from one goroutine.
type capture struct {
	limit int
	keep  bool
	buf   []byte
	total int64
}

func newCapture(limit int, keep bool) *capture {
	return &capture{limit: limit, keep: keep}
}

// Write never fails: output past the limit is counted and dropped, so the
// command is never blocked or killed by a full pipe.
func (c *capture) Write(p []byte) (int, error) {
	c.total += int64(len(p))
	if c.keep && len(c.buf) < c.limit {
		room := c.limit - len(c.buf)
		c.buf = append(c.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// text returns the kept output as valid UTF-8 and whether it is shorter than
// what was written. A multi-byte character cut by the limit is dropped whole;
// invalid bytes become U+FFFD.
func (c *capture) text() (string, bool) {
	b := c.buf
	truncated := c.total > int64(len(b))
	if truncated {
		b = trimPartialRune(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), truncated
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}
