//go:build linux

package agent

import (
	"bytes"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// capture is an io.Writer that keeps the first limit bytes written to it and
// counts all of them, so a command's output costs bounded memory however much
// it prints. Write is called from one goroutine (the one copying the
// stream); latestLine may be called from any.
type capture struct {
	limit int
	keep  bool
	buf   []byte
	total int64
	// spillDir, when set, is where the whole output goes (spill) once it
	// outgrows the limit, so that a truncated result can still be paged.
	spillDir string
	spill    *spool

	mu      sync.Mutex // guards the fields below, read by progress reports
	last    string     // the latest complete, non-blank line
	partial []byte     // the line being written, at most maxLineMemory bytes
	updated time.Time
}

// maxLineMemory bounds the line a capture remembers for progress reports.
const maxLineMemory = 200

func newCapture(limit int, keep bool) *capture {
	return &capture{limit: limit, keep: keep}
}

// Write never fails: output past the limit is counted and dropped, so the
// command is never blocked or killed by a full pipe.
func (c *capture) Write(p []byte) (int, error) {
	c.total += int64(len(p))
	if c.keep && c.spillDir != "" {
		c.spillPast(p)
	}
	if c.keep && len(c.buf) < c.limit {
		room := c.limit - len(c.buf)
		c.buf = append(c.buf, p[:min(room, len(p))]...)
	}
	c.remember(p)
	return len(p), nil
}

// spillPast copies the output to a spool once it outgrows the limit; a
// spool that cannot be made leaves the result truncated as before.
func (c *capture) spillPast(p []byte) {
	if c.spill == nil {
		if c.total <= int64(c.limit) {
			return
		}
		s, err := openSpool(c.spillDir)
		if err != nil {
			c.spillDir = ""
			return
		}
		c.spill = s
		_, _ = s.Write(c.buf)
	}
	_, _ = c.spill.Write(p)
}

// remember keeps the latest line written, for progress reports.
func (c *capture) remember(p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updated = time.Now()
	for {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			break
		}
		c.partial = appendCapped(c.partial, p[:i])
		if line := strings.TrimSpace(string(c.partial)); line != "" {
			c.last = line
		}
		c.partial, p = c.partial[:0], p[i+1:]
	}
	c.partial = appendCapped(c.partial, p)
}

func appendCapped(b, p []byte) []byte {
	return append(b, p[:min(len(p), maxLineMemory-min(len(b), maxLineMemory))]...)
}

// latestLine returns the line being written, or else the last one, as
// valid UTF-8, and when the stream was last written to.
func (c *capture) latestLine() (string, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	line := c.last
	if partial := strings.TrimSpace(string(c.partial)); partial != "" {
		line = partial
	}
	return strings.ToValidUTF8(line, "\uFFFD"), c.updated
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
